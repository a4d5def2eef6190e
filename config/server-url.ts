/** The server's base URL without a trailing `/v1` (what samplers use as the OpenAI base URL). */
export function engineRoot(server: string): string {
  return server.replace(/\/+$/, '').replace(/\/v1$/, '');
}
