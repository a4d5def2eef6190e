import type { RunConfig } from '../../../config/schema';
import type { ChatRequest, LlmCaller } from '../../../activities/clients/inference';
import { SPELL_CALLS } from '../../../activities/clients/llm-protocol';
import { loadCorpus } from '../../../activities/corpus/corpus';
import { planSpell } from '../../../activities/recipes/spell/plan';
import { proposeSpell } from '../../../activities/recipes/spell/propose';
import { gateSpell } from '../../../activities/recipes/spell/gate';
import { solveSpell } from '../../../activities/recipes/spell/solve';
import { judgeSpell } from '../../../activities/recipes/spell/judge';
import { filterSpell } from '../../../activities/recipes/spell/filter';
import { historyKey } from '../../../activities/recipes/spell/memory';
import { majorityVote, responderReward } from '../../../activities/recipes/spell/rewards';
import { zScores } from '../../../activities/scoring/advantages';
import type { SpellState, SpellUnit } from '../../../activities/recipes/spell/records';
import { BEHAVIOURS } from '../../support/scripted-llm/behaviour';
import { startScriptedLlm } from '../../support/scripted-llm/server';
import { DEFAULT_CONFIG, type BehaviourSettings } from '../../support/scripted-llm/config';
import { configFor, recipeTestContext, scriptedCaller, scriptedEndpoint } from '../../support/recipe-harness';

const G = 4;
const config = (overrides: Record<string, unknown> = {}): RunConfig =>
  configFor({
    recipe: 'spell',
    groupSize: G,
    batchSize: 24,
    shardSize: 8,
    corpus: { uri: 'test/fixtures/corpus/clusters.jsonl' },
    ...overrides,
  });

/** The scripted server's behaviours, called in process: the only thing tests may script is the model. */
const scriptedModel = (
  settings: Partial<BehaviourSettings> = {},
  override?: (req: ChatRequest) => string | undefined,
) =>
  scriptedCaller((req, index) => {
    const behaviour = BEHAVIOURS[req.call];
    if (!behaviour) throw new Error(`no behaviour for ${req.call}`);
    return (
      override?.(req) ??
      behaviour.answer({
        messages: req.messages,
        seed: req.seed,
        temperature: req.temperature,
        index,
        settings: { ...DEFAULT_CONFIG, ...settings },
      })
    );
  });

async function runIteration(cfg: RunConfig, llm: LlmCaller, state?: SpellState, iteration = 1) {
  const corpus = await loadCorpus(cfg.corpus.uri);
  const planned = await planSpell({
    config: cfg,
    runId: 'unit',
    iteration,
    corpus: () => Promise.resolve(corpus),
    segments: () => Promise.reject(new Error('unused')),
    state,
  });
  const plan: SpellUnit[] = planned.map((u, i) => ({ ...u, unit: i, docIndex: i }));
  const ctx = recipeTestContext(cfg, llm, { state, iteration });
  const propose = await Promise.all(plan.map((u) => proposeSpell(ctx, u)));
  const gate = gateSpell(plan, propose, cfg.spell.maxPromptTokens);
  const solve = await Promise.all(gate.map((g) => solveSpell(ctx, g)));
  const judge = await Promise.all(gate.map((g, i) => judgeSpell(ctx, g, solve[i])));
  const out = filterSpell({ config: cfg, runId: 'unit', iteration, state }, [
    { shard: 0, plan, propose, gate, solve, judge },
  ]);
  return { plan, propose, gate, solve, judge, out };
}

describe('SPELL stages against the scripted model', () => {
  test('an iteration: typed questioner outcomes, the grounding filter, G responses, G votes each, one batch', async () => {
    const cfg = config({ spell: { verifierRatio: 1 } });
    const { llm, calls } = scriptedModel({ passRate: { min: 0.1, max: 0.9 }, ungroundedRate: 0.3 });
    const { plan, propose, gate, solve, judge, out } = await runIteration(cfg, llm);
    const count = (call: string) => calls.filter((c) => c.call === call).length;

    expect(count(SPELL_CALLS.questioner)).toBe(24);
    // The probe runs once per parsed question, with "Empty" for the documents.
    const questions = propose.filter((p) => p.outcome.kind === 'question');
    expect(count(SPELL_CALLS.grounding)).toBe(questions.length);
    for (const c of calls.filter((x) => x.call === SPELL_CALLS.grounding))
      expect(c.messages[0]?.content).toContain('<text>\nEmpty\n</text>');
    const statuses = gate.map((g) => g.status);
    for (const s of ['valid', 'bad_ground', 'bad_format'] as const) expect(statuses).toContain(s);
    // Responders see the whole cluster, G samples per valid question.
    for (const [i, g] of gate.entries()) {
      const unit = plan[i] as SpellUnit;
      if (g.status !== 'valid') {
        expect(solve[i]?.completions).toEqual([]);
        continue;
      }
      expect(solve[i]?.completions).toHaveLength(G);
      for (const d of unit.documents) expect(g.responderMessages?.[0]?.content).toContain(d.text);
    }
    // A verifier request of G per response with an answer; none without one.
    const answered = judge.flatMap((j) => j.responses).filter((r) => r.answer !== null);
    expect(count(SPELL_CALLS.verifier)).toBe(answered.length);
    for (const r of judge.flatMap((j) => j.responses))
      expect(r.verifier?.votes.length ?? 0).toBe(r.answer === null ? 0 : G);

    const { rows, state, metrics } = out;
    const byGroup = new Map<string, typeof rows>();
    for (const r of rows) byGroup.set(r.group, [...(byGroup.get(r.group) ?? []), r]);
    for (const [name, group] of byGroup) {
      const rewards = group.map((r) => r.reward);
      const expected = zScores(rewards, 1);
      group.forEach((r, j) => expect(r.advantage).toBeCloseTo(expected[j] as number, 12));
      if (!name.startsWith('questioner/')) expect(group).toHaveLength(G);
      if (name.startsWith('responder/')) expect(new Set(rewards).size).toBeGreaterThan(1);
    }
    const responderGroups = [...byGroup.keys()].filter((k) => k.startsWith('responder/')).length;
    expect(responderGroups).toBeGreaterThan(0);
    expect(metrics.extra.questionerPositives).toBe(responderGroups);
    expect(metrics.rowsByRole.questioner).toBe(responderGroups + (metrics.extra.questionerNegatives ?? 0));
    expect(metrics.documents).toBe(24);
    expect(metrics.passRateHistogram).toHaveLength(G + 1);
    // The verifier's agreement with the rule: every vote on a valid question's response, against its R_rule.
    const votes = judge.flatMap((j, i) =>
      gate[i]?.status === 'valid'
        ? j.responses.flatMap((r) => (r.verifier?.votes ?? []).map((v) => v === (r.rule ? 1 : 0)))
        : [],
    );
    expect(votes.length).toBeGreaterThan(0);
    expect(metrics.extra.verifierRuleAgreement).toBeCloseTo(votes.filter(Boolean).length / votes.length, 12);

    // The next history holds exactly the valid questions with 0 < r̄ < 1, with their questioner documents.
    const expected: Record<string, string[]> = {};
    gate.forEach((g, i) => {
      if (g.status !== 'valid') return;
      const r = (judge[i]?.responses ?? []).map((x) =>
        responderReward(x.rule, x.verifier && majorityVote(x.verifier.votes)),
      );
      const mean = r.reduce((a, b) => a + b, 0) / r.length;
      if (mean > 0 && mean < 1)
        (expected[historyKey(plan[i]!.task, plan[i]!.cluster)] ??= []).push(plan[i]!.questionerDocs.join());
    });
    expect(Object.keys(expected).length).toBeGreaterThan(0);
    expect(
      Object.fromEntries(
        Object.entries(state?.history ?? {}).map(([k, h]) => [k, h.map((e) => e.docs.join())]),
      ),
    ).toEqual(Object.fromEntries(Object.entries(expected).map(([k, docs]) => [k, docs.slice(-3)])));

    // The next iteration's questioners see that history: examples and a wider context.
    const next = await runIteration(cfg, scriptedModel().llm, state, 2);
    for (const u of next.plan) {
      const h = state?.history[historyKey(u.task, u.cluster)] ?? [];
      expect(u.examples).toEqual(h.map(({ question, answer }) => ({ question, answer })));
      expect(u.questionerDocs.length).toBe(
        Math.min(u.documents.length, new Set(h.flatMap((e) => e.docs)).size + 5),
      );
      if (h.length > 0) expect(next.propose[u.unit]?.messages[0]?.content).toContain('## Previous Examples');
    }
  });

  test('malformed verifier outputs count as invalid judgments (−1) and a bad question costs −1', async () => {
    const cfg = config({
      spell: { verifierRatio: 4, verifierAgreement: { min: 0, max: 1 }, verifierConsistency: false },
    });
    const { llm } = scriptedModel({ passRate: { min: 0.2, max: 0.8 }, invalidTaskRate: 0.3 }, (req) =>
      req.call === SPELL_CALLS.verifier && (req.seed ?? 0) % 3 === 0
        ? 'Explanation: unsure.\nDecision: maybe'
        : undefined,
    );
    const { out, judge } = await runIteration(cfg, llm);
    expect(judge.flatMap((j) => j.responses.flatMap((r) => r.verifier?.votes ?? []))).toContain(-1);
    const verifierRows = out.rows.filter((r) => r.role === 'verifier');
    expect(verifierRows.map((r) => r.reward)).toContain(-1);
    expect(out.rows.filter((r) => r.role === 'questioner').map((r) => r.reward)).toContain(-1);
  });

  test('ablations: no grounding probe, no verifier, frozen roles', async () => {
    const cfg = config({
      spell: { groundingFilter: false, useVerifier: false, frozenRoles: ['questioner'] },
    });
    const { llm, calls } = scriptedModel({ ungroundedRate: 1 });
    const { gate, out } = await runIteration(cfg, llm);
    expect(calls.some((c) => c.call === SPELL_CALLS.grounding || c.call === SPELL_CALLS.verifier)).toBe(
      false,
    );
    expect(gate.some((g) => g.status === 'bad_ground')).toBe(false);
    expect(out.rows.some((r) => r.role === 'questioner' || r.role === 'verifier')).toBe(false);
    expect(out.rows.some((r) => r.role === 'responder')).toBe(true);
  });

  test('every row carries the temperature and top-p SPELL samples at, as the inference client sent them', async () => {
    const server = await startScriptedLlm({ tokenIds: 'vllm', passRate: { min: 0.2, max: 0.8 } });
    try {
      const endpoint = scriptedEndpoint(server);
      const cfg = config({ spell: { verifierRatio: 1 } });
      expect(cfg.sampling).toMatchObject({ temperature: 0.7, topP: 0.95 }); // the preset's
      const { out } = await runIteration(cfg, endpoint);
      expect(new Set(out.rows.map((r) => r.role))).toEqual(new Set(['questioner', 'responder', 'verifier']));
      for (const row of out.rows) {
        expect(row.completionTokens).toBeDefined();
        expect(row).toMatchObject({ temperature: 0.7, topP: 0.95 });
      }
      // At 1 the rows leave both out (the kernel's default), so a kernel from before the fields takes them.
      const atOne = await runIteration(config({ sampling: { temperature: 1, topP: 1 } }), endpoint);
      expect(atOne.out.rows.length).toBeGreaterThan(0);
      for (const row of atOne.out.rows) expect(['temperature', 'topP'].filter((k) => k in row)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  test('an over-long responder prompt skips the question', async () => {
    const { llm } = scriptedModel({ invalidTaskRate: 0, ungroundedRate: 0 });
    const { gate } = await runIteration(config({ spell: { maxPromptTokens: 100 } }), llm);
    expect(gate.filter((g) => g.status === 'valid')).toEqual([]);
    expect(gate.filter((g) => g.reason === 'prompt_too_long').length).toBeGreaterThan(0);
  });
});
