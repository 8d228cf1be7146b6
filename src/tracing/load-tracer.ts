import type { OtlpProtocol } from '../config.js';
import type { Tracer } from './tracer.js';

/**
 * The OpenTelemetry tracer when export is on, else null. The SDK is imported here and only here,
 * so a server without OTEL_EXPORTER_OTLP_ENDPOINT never loads it.
 */
export async function loadTracer(options: { enabled: boolean; protocol: OtlpProtocol; serviceVersion: string }): Promise<Tracer | null> {
  if (!options.enabled) return null;
  const { createOtelTracer } = await import('./otel-tracer.js');
  return createOtelTracer({ serviceVersion: options.serviceVersion, protocol: options.protocol });
}
