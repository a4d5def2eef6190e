import { seedOf } from '../../../activities/lib/rng';
import type { FaultKind, FaultRates } from './config';
import type { ContentFaultKind } from './completion';

/**
 * Which transient fault, if any, hits a request. The choice is a hash of the request's fingerprint, so it is
 * reproducible, and it is only made the first time a fingerprint is seen, so the client's retry of the same
 * body succeeds, as after a real transient failure.
 */

/** Faults of the server itself, checked in this order before the content faults. */
const TRANSPORT_FAULTS: readonly FaultKind[] = ['http500', 'timeout', 'malformedJson'];

export function chooseFault(
  fingerprint: string,
  rates: FaultRates,
  contentFault: ContentFaultKind | undefined,
): FaultKind | undefined {
  const candidates = contentFault ? [...TRANSPORT_FAULTS, contentFault] : TRANSPORT_FAULTS;
  return candidates.find((kind) => seedOf('fault', kind, fingerprint) / 0x1_0000_0000 < rates[kind]);
}

/** An HTTP 200 body that starts like a chat completion and stops mid-string: not JSON. */
export const MALFORMED_BODY =
  '{"id":"chatcmpl-scripted","object":"chat.completion","choices":[{"index":0,"message":{"con';
