import { resolveRunConfig } from '../../config/schema';
import type { TrainingRow } from '../../activities/clients/trainer-contract';
import { rowsByPolicy } from '../../activities/stages/filter';

const row = (role: string, advantage: number): TrainingRow => ({
  messages: [{ role: 'user', content: 'q' }],
  completion: 'a',
  role,
  group: `${role}/doc-0`,
  reward: advantage,
  advantage,
});

function configWith(training: Record<string, unknown>) {
  const result = resolveRunConfig({ recipe: 'spice', training });
  if (!result.ok) throw new Error(result.problems.join('; '));
  return result.config;
}

describe('the batch a policy trains on', () => {
  const rows = [row('challenger', 0.5), row('reasoner', -0.25), row('reasoner', 0.25)];
  const policy = configWith({}).training.policy;
  const versions = { [policy]: 3 };
  /** The rows as the batch holds them: with the version that sampled them. */
  const sampled = rows.map((r) => ({ ...r, behaviourVersion: 3 }));

  test('holds every role by default, and the advantages flipped under the negated control', () => {
    expect(rowsByPolicy(configWith({}), rows, versions).get(policy)).toEqual(sampled);
    const flipped = rowsByPolicy(configWith({ negateAdvantages: true }), rows, versions).get(policy) ?? [];
    expect(flipped.map((r) => r.advantage)).toEqual([-0.5, 0.25, -0.25]);
  });

  test('leaves out the rows of an ablated role and keeps the others as they are', () => {
    const config = configWith({ ablateRoles: ['challenger'] });
    expect(rowsByPolicy(config, rows, versions).get(policy)).toEqual(sampled.slice(1));
  });
});
