import { ListObjectVersionsCommand, type S3Client } from '@aws-sdk/client-s3';
import { manifestKey } from '../../activities/clients/storage/keys';

/**
 * What the chaos suite checks after its runs, from what storage and the trainer recorded (not from what the
 * runs say about themselves). The bucket keeps every version of every object, so a key written twice shows.
 */

/** How many versions each key under `prefix/` has (`prefix/` stripped). */
export async function objectVersions(
  s3: S3Client,
  bucket: string,
  prefix: string,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let keyMarker: string | undefined;
  let versionIdMarker: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectVersionsCommand({
        Bucket: bucket,
        Prefix: `${prefix}/`,
        KeyMarker: keyMarker,
        VersionIdMarker: versionIdMarker,
      }),
    );
    for (const v of page.Versions ?? []) {
      const key = (v.Key ?? '').slice(prefix.length + 1);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    keyMarker = page.IsTruncated ? page.NextKeyMarker : undefined;
    versionIdMarker = page.IsTruncated ? page.NextVersionIdMarker : undefined;
  } while (keyMarker);
  return counts;
}

/** A unit's stored result (`.../shard-NNNN/unit-NNNN.json.gz`), not one of its parts. */
const UNIT_RESULT = /\/shard-\d{4}\/unit-\d{4}\.json\.gz$/;

/** Units computed again although stored: every extra version of a unit's result. */
export function unitsRecomputed(versions: ReadonlyMap<string, number>): number {
  let extra = 0;
  for (const [key, n] of versions) if (UNIT_RESULT.test(key)) extra += n - 1;
  return extra;
}

/** Training steps applied more than once: every application of an idempotency key after its first. */
export function stepsAppliedTwice(appliedByKey: Readonly<Record<string, number>>): number {
  return Object.values(appliedByKey).reduce((sum, n) => sum + Math.max(0, n - 1), 0);
}

export interface AuditedRun {
  runId: string;
  /** Iterations that must be committed: all of them for a completed run, else those its pointer showed. */
  upTo: number;
}

/**
 * Iterations lost: an iteration the run must have committed whose manifest is missing or was written more
 * than once (a commit redone), or whose training step was not applied exactly once.
 */
export function iterationsLost(
  runs: readonly AuditedRun[],
  versions: ReadonlyMap<string, number>,
  steps: ReadonlyArray<{ runId: string; iteration: number }>,
): number {
  let lost = 0;
  for (const { runId, upTo } of runs) {
    for (let n = 1; n <= upTo; n++) {
      const applied = steps.filter((s) => s.runId === runId && s.iteration === n).length;
      if (versions.get(manifestKey(runId, n)) !== 1 || applied !== 1) lost++;
    }
  }
  return lost;
}
