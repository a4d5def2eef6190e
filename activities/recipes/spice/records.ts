import type { ChatMessage } from '../../clients/trainer-contract';
import type { SampledTokens } from '../../clients/sampled-tokens';
import type { Unit } from '../types';
import type { FreeFormType, SpiceTask } from './parse';

/** SPICE's per-document records, one per stage; all plain JSON, stored per shard. */

export const CHALLENGER = 'challenger';
export const REASONER = 'reasoner';

export interface SpiceProposal extends Unit {
  docIndex: number;
  format: 'mcq' | 'free_form';
  answerType?: FreeFormType;
  /** The type-selection helper failed every try and the format fell back to the default. */
  typeSelectionFallback: boolean;
  /** Challenger attempts made (in rounds of G) until one was valid, and how many were. */
  attempts: number;
  validAttempts: number;
  /** The Challenger prompt, shared by the G trajectories. */
  messages: ChatMessage[];
  /** 𝒯_C: G attempts subsampled with the attempts' valid:invalid ratio. */
  /** 𝒯_C: G attempts subsampled with the attempts' valid:invalid ratio; `sampled` when the engine returned ids. */
  trajectories: Array<{ completion: string; finishReason: string; sampled?: SampledTokens }>;
}

export type GateVerdict = { valid: true; task: SpiceTask } | { valid: false; reason: string };

export interface SpiceGated extends Unit {
  docIndex: number;
  verdicts: GateVerdict[];
}

export interface SpiceSolved extends Unit {
  docIndex: number;
  /** G Reasoner answers for each valid Challenger trajectory, which the Reasoner sees without the document. */
  answers: Array<{
    trajectory: number;
    messages: ChatMessage[];
    completions: string[];
    /** Each completion's sampled ids (null where the engine returned none); absent when none had them. */
    sampled?: Array<SampledTokens | null>;
  }>;
}

export interface SpiceJudged extends Unit {
  docIndex: number;
  tasks: Array<{ trajectory: number; correct: boolean[]; extracted: Array<string | null> }>;
}
