import { rm } from 'node:fs/promises';

/** What the global setup started, kept in the runner's process for this teardown. */
export interface StartedServers {
  stops: Array<() => Promise<void>>;
  tempDir: string;
}

declare global {
  var __selfplayServers: StartedServers | undefined;
}

/** Stops only what the global setup started (never a server named by TEMPORAL_ADDRESS / S3_ENDPOINT). */
export default async function globalTeardown(): Promise<void> {
  const started = globalThis.__selfplayServers;
  globalThis.__selfplayServers = undefined;
  if (started) await stopServers(started);
}

export async function stopServers(started: StartedServers): Promise<void> {
  await Promise.allSettled(started.stops.map((stop) => stop()));
  await rm(started.tempDir, { recursive: true, force: true });
}
