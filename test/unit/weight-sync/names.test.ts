import { formatWeightTag, parseWeightTag } from '../../../activities/clients/weight-tag';
import { fillModelName, versionNamed } from '../../../config/model-name';
import { DIGEST } from './fixtures';

/** Names and tags carry the weights' digest, so other weights of a version are another name. */
describe("the weights' digest in names and tags", () => {
  const owner = { run: 'r1', policy: 'solver' };
  const template = '{run}/{policy}-v{version}';

  test('a model name carries the digest prefix after the version, and reads back to the version', () => {
    const name = fillModelName(template, owner, 4, DIGEST.again);
    expect(name).toBe(`r1/solver-v4-${'b'.repeat(12)}`);
    expect(versionNamed(template, owner, name)).toBe(4);
    // A snapshot from before digests: the version alone, as before.
    expect(fillModelName(template, owner, 4)).toBe('r1/solver-v4');
    expect(versionNamed(template, owner, 'r1/solver-v4')).toBe(4);
    expect(versionNamed(template, owner, 'r1/solver-v4-nothex')).toBeUndefined();
    expect(versionNamed(template, owner, `r2/solver-v4-${'b'.repeat(12)}`)).toBeUndefined();
  });

  test("an engine's weight tag carries the digest prefix; tags from before digests still parse", () => {
    const tag = formatWeightTag(4, 'r1', DIGEST.first);
    expect(tag).toBe(`r1@4-${'a'.repeat(12)}`);
    expect(parseWeightTag(tag)).toEqual({ run: 'r1', version: 4, digest: 'a'.repeat(12) });
    expect(parseWeightTag(formatWeightTag(4, undefined, DIGEST.first))).toEqual({
      version: 4,
      digest: 'a'.repeat(12),
    });
    expect(parseWeightTag('r1.r2@7')).toEqual({ run: 'r1.r2', version: 7 });
    expect(parseWeightTag('default')).toBeUndefined();
  });
});
