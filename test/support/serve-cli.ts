/**
 * The tail of a test-double server's CLI: announce where it listens as one JSON line on stdout (what a parent
 * process waits for), then close cleanly on SIGTERM or SIGINT.
 */
export function announceAndServe(server: { url: string; port: number; close(): Promise<void> }): void {
  process.stdout.write(`${JSON.stringify({ url: server.url, port: server.port })}\n`);
  const stop = (): void => {
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error(err);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** Runs a CLI's main, reporting a startup failure on stderr with exit code 2. */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(2);
  });
}
