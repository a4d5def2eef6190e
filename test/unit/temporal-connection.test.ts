import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { temporalConnectionFromEnv } from '../../config/temporal-connection';

describe('temporalConnectionFromEnv', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'temporal-tls-'));
    writeFileSync(path.join(dir, 'tls.crt'), 'CERT');
    writeFileSync(path.join(dir, 'tls.key'), 'KEY');
    writeFileSync(path.join(dir, 'ca.crt'), 'CA');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string): string => path.join(dir, name);

  test('a plain local server by default', () => {
    expect(temporalConnectionFromEnv({})).toEqual({ address: 'localhost:7233', namespace: 'default' });
    expect(
      temporalConnectionFromEnv({
        TEMPORAL_ADDRESS: 'temporal-frontend:7233',
        TEMPORAL_NAMESPACE: 'rl',
        TEMPORAL_TLS: 'false',
      }),
    ).toEqual({ address: 'temporal-frontend:7233', namespace: 'rl' });
  });

  test('mTLS from mounted files, with a CA and a server name', () => {
    const settings = temporalConnectionFromEnv({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CERT: file('tls.crt'),
      TEMPORAL_TLS_KEY: file('tls.key'),
      TEMPORAL_TLS_CA: file('ca.crt'),
      TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
    });
    expect(settings.tls?.clientCertPair?.crt.toString()).toBe('CERT');
    expect(settings.tls?.clientCertPair?.key.toString()).toBe('KEY');
    expect(Buffer.from(settings.tls?.serverRootCACertificate ?? []).toString()).toBe('CA');
    expect(settings.tls?.serverNameOverride).toBe('frontend.internal');
    expect(settings.apiKey).toBeUndefined();
  });

  test('an API key implies TLS; TEMPORAL_TLS=true alone asks for it', () => {
    expect(temporalConnectionFromEnv({ TEMPORAL_API_KEY: 'k' })).toMatchObject({ apiKey: 'k', tls: {} });
    expect(temporalConnectionFromEnv({ TEMPORAL_TLS: 'TRUE' }).tls).toEqual({});
  });

  test('contradictions and unreadable files are named', () => {
    expect(() => temporalConnectionFromEnv({ TEMPORAL_TLS_CERT: file('tls.crt') })).toThrow(
      /TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together/,
    );
    expect(() => temporalConnectionFromEnv({ TEMPORAL_TLS: 'yes' })).toThrow(
      /TEMPORAL_TLS="yes": expected true or false/,
    );
    expect(() => temporalConnectionFromEnv({ TEMPORAL_TLS: 'false', TEMPORAL_API_KEY: 'k' })).toThrow(
      /TEMPORAL_TLS=false, but TEMPORAL_API_KEY/,
    );
    expect(() =>
      temporalConnectionFromEnv({
        TEMPORAL_TLS_CERT: file('missing.crt'),
        TEMPORAL_TLS_KEY: file('tls.key'),
      }),
    ).toThrow(/TEMPORAL_TLS_CERT=.*missing\.crt: cannot read the file/);
  });
});
