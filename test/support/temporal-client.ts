import { Client, type Connection } from '@temporalio/client';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { dataConverterFromEnv } from '../../config/payload-codec';

/** A client with the payload codec the workers use (SELFPLAY_CODEC_KEYS, set by the global setup). */
export function temporalClient(connection: Connection): Client {
  return new Client({ connection, dataConverter: dataConverterFromEnv() });
}

/** A payload read from a fetched history (encrypted when the codec is on) as its value. */
export async function payloadValue<T>(payload: Payload): Promise<T> {
  let decoded = [payload];
  for (const codec of dataConverterFromEnv().payloadCodecs ?? []) decoded = await codec.decode(decoded);
  return defaultPayloadConverter.fromPayload<T>(decoded[0]!);
}
