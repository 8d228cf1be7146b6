import type { FastifyInstance } from 'fastify';

/**
 * HTML forms post application/x-www-form-urlencoded. This parser is added only inside the
 * dashboard's plugin context, so the JSON API keeps answering 415 to form bodies. Each field
 * keeps its first value; the result has no prototype, so a field named __proto__ is just a field.
 */
export type FormBody = Record<string, string>;

export function installFormBodyParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    const form: FormBody = Object.create(null) as FormBody;
    for (const [name, value] of new URLSearchParams(body as string)) if (!(name in form)) form[name] = value;
    done(null, form);
  });
}

/** The form's fields, whatever arrived (an empty or JSON body reads as no fields). */
export function formFields(body: unknown): FormBody {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return {};
  const form: FormBody = Object.create(null) as FormBody;
  for (const [name, value] of Object.entries(body)) if (typeof value === 'string') form[name] = value;
  return form;
}
