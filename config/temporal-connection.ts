import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';

/**
 * How workers and the CLI reach Temporal, from the environment (a cluster's Secrets mount the files):
 *
 *   TEMPORAL_ADDRESS                     host:port (default localhost:7233)
 *   TEMPORAL_NAMESPACE                   (default `default`)
 *   TEMPORAL_API_KEY                     an API key (Temporal Cloud); implies TLS
 *   TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY  files of a client certificate and its key (mTLS); both or neither
 *   TEMPORAL_TLS_CA                      a file with the server's root CA, when the system does not trust it
 *   TEMPORAL_TLS_SERVER_NAME             the name to verify the server's certificate against
 *   TEMPORAL_TLS                         `true` for TLS with none of the above (a server with a public cert)
 */
export interface TemporalConnectionSettings {
  address: string;
  namespace: string;
  tls?: TLSConfig;
  apiKey?: string;
}

export function temporalConnectionFromEnv(env: NodeJS.ProcessEnv = process.env): TemporalConnectionSettings {
  const read = (name: string): Buffer | undefined => {
    const path = env[name];
    if (!path) return undefined;
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`${name}=${path}: cannot read the file (${String(err)})`, { cause: err });
    }
  };
  const crt = read('TEMPORAL_TLS_CERT');
  const key = read('TEMPORAL_TLS_KEY');
  if ((crt === undefined) !== (key === undefined)) {
    throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (mTLS) or neither');
  }
  const ca = read('TEMPORAL_TLS_CA');
  const serverName = env.TEMPORAL_TLS_SERVER_NAME || undefined;
  const apiKey = env.TEMPORAL_API_KEY || undefined;
  const flag = env.TEMPORAL_TLS?.trim().toLowerCase();
  if (flag !== undefined && flag !== '' && !['true', 'false', '1', '0'].includes(flag)) {
    throw new Error(`TEMPORAL_TLS=${JSON.stringify(env.TEMPORAL_TLS)}: expected true or false`);
  }
  const implied = !!crt || !!ca || !!serverName || apiKey !== undefined;
  if ((flag === 'false' || flag === '0') && implied) {
    throw new Error(
      'TEMPORAL_TLS=false, but TEMPORAL_API_KEY or a TEMPORAL_TLS_* setting needs TLS: unset one or the other',
    );
  }
  const wantsTls = flag === 'true' || flag === '1' || implied;
  const tls: TLSConfig | undefined = wantsTls
    ? {
        ...(crt && key ? { clientCertPair: { crt, key } } : {}),
        ...(ca ? { serverRootCACertificate: ca } : {}),
        ...(serverName ? { serverNameOverride: serverName } : {}),
      }
    : undefined;
  return {
    address: env.TEMPORAL_ADDRESS || 'localhost:7233',
    namespace: env.TEMPORAL_NAMESPACE || 'default',
    ...(tls ? { tls } : {}),
    ...(apiKey ? { apiKey } : {}),
  };
}
