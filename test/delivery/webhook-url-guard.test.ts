import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, isBlockedAddress } from '../../src/delivery/address-guard.js';
import { makeTestApp, type TestApp } from '../support/make-app.js';

describe('webhook URL guard when private webhooks are not allowed', () => {
  it.each([
    '127.0.0.1', '127.8.9.10', '::1', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '0.0.0.0', '::', '224.0.0.1', 'ff02::1', 'fe80::1', 'fd00::1', 'fd00:ec2::254',
    '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '64:ff9b::7f00:1',
    // IPv4-compatible (::/96): ::127.0.0.1 and ::10.0.0.1 by another name, and a public one too.
    '::7f00:1', '::127.0.0.1', '::a00:1', '::8.8.8.8', '100::1', '2001:db8::1',
  ])('blocks %s', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700::1111'])('allows the public address %s', (address) => {
    expect(isBlockedAddress(address)).toBe(false);
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[::7f00:1]/hook',
    'http://10.0.0.5/hook',
    'http://172.16.5.5/hook',
    'http://192.168.0.10/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://localhost:3000/hook',
    'http://2130706433/hook',
    'http://0x7f.1/hook',
  ])('refuses %s', async (url) => {
    const check = await checkWebhookUrl(url, false);
    expect(check.ok).toBe(false);
  });

  it('accepts a public IP literal and refuses other schemes even when private URLs are allowed', async () => {
    expect((await checkWebhookUrl('https://93.184.216.34/hook', false)).ok).toBe(true);
    expect((await checkWebhookUrl('file:///etc/passwd', true)).ok).toBe(false);
    expect((await checkWebhookUrl('http://user:pass@example.com/', true)).ok).toBe(false);
    expect((await checkWebhookUrl('http://localhost:3000/hook', true)).ok).toBe(true);
  });

  describe('through the management API', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await makeTestApp({ allowPrivateWebhooks: false });
    });
    afterAll(() => t.close());

    it('refuses a loopback webhook URL with INVALID_WEBHOOK_URL', async () => {
      const team = await t.services.manage.createTeam({ name: 'x' });
      const res = await t.admin({ method: 'POST', url: `/manage/v1/teams/${team.teamId}/projects`, payload: { name: 'p', webhookUrl: 'http://127.0.0.1/x' } });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'INVALID_WEBHOOK_URL', data: { field: 'webhookUrl' } });
    });
  });
});
