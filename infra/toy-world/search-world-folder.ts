/**
 * What the search worlds (SSP's, SCOPE's) share in writing their files: a folder named by the hash of what it
 * holds, with the BM25 index of its `corpus.jsonl` (built by the `selfplay index` code), complete once its
 * `world.json` is written; and a scratch index of a corpus for the warm-start examples, which are part of
 * what names the folder and so exist before it.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildIndex } from '../../activities/retrieval/build';
import { loadRetriever } from '../../activities/retrieval/retriever';
import type { Retriever } from '../../activities/tools/types';
import { jsonl } from './prepare';

/** The model name a search world's grader is served as (the scripted server's, which answers its calls). */
export const SEARCH_WORLD_GRADER_MODEL = 'scripted-policy';

/** The file (written last) whose presence says a world's folder is complete. */
export const WORLD_DONE = 'world.json';

/**
 * `parent/<hash of files>` with `files` written and the index of its `corpus.jsonl` in `index/`; `done` (the
 * world's options) goes into `world.json`. A folder an interrupted call left has no `world.json`: it is
 * written again from scratch.
 */
export async function writeSearchWorld(
  parent: string,
  files: Record<string, string>,
  done: object,
): Promise<string> {
  const hash = createHash('sha256');
  for (const [name, text] of Object.entries(files)) hash.update(name).update('\0').update(text);
  const dir = path.join(parent, hash.digest('hex').slice(0, 16));
  if (!existsSync(path.join(dir, WORLD_DONE))) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
    await buildIndex({ corpus: path.join(dir, 'corpus.jsonl'), out: path.join(dir, 'index'), kind: 'bm25' });
    writeFileSync(path.join(dir, WORLD_DONE), JSON.stringify(done) + '\n');
  }
  return dir;
}

/** `use` with a retriever on an index of `corpus` (JSONL text) built in a scratch folder, removed after. */
export async function withScratchRetriever<T>(
  corpus: string,
  use: (retriever: Retriever) => Promise<T>,
): Promise<T> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'search-world-'));
  try {
    writeFileSync(path.join(scratch, 'corpus.jsonl'), corpus);
    const index = path.join(scratch, 'index');
    await buildIndex({ corpus: path.join(scratch, 'corpus.jsonl'), out: index, kind: 'bm25' });
    return await use(await loadRetriever(index, { apiKey: 'EMPTY' }));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The files every search world has, by path. */
export interface SearchWorldFiles {
  dir: string;
  /** JSONL corpus (`{"id","title","text"}`): what the index is built from. */
  corpus: string;
  /** The BM25 index of the corpus, for `retrieval.index`. */
  index: string;
  /** `{"id","question","answer"}` about held-out chains, for agentic evaluation. */
  heldOut: string;
  /** `{"messages","completion","role","lossMaskSpans"}` per line. */
  warmStart: string;
}

/**
 * A search world's folder (`writeSearchWorld`) from its options (`o.dir` the parent), its corpus (JSONL text),
 * its held-out benchmark, its warm-start examples (searched on a scratch index of the corpus: BM25 is
 * deterministic, so the world's own index answers every query alike) and its other files by name.
 */
export async function prepareSearchWorld(
  o: { dir: string },
  world: {
    corpus: string;
    heldOut: string;
    examples: (retriever: Retriever) => Promise<unknown[]>;
    others: Record<string, string>;
  },
): Promise<SearchWorldFiles> {
  const examples = await withScratchRetriever(world.corpus, world.examples);
  const dir = await writeSearchWorld(
    o.dir,
    {
      'corpus.jsonl': world.corpus,
      ...world.others,
      'heldout.jsonl': world.heldOut,
      'warm-start.jsonl': jsonl(examples),
    },
    { ...o, dir: undefined },
  );
  return {
    dir,
    corpus: path.join(dir, 'corpus.jsonl'),
    index: path.join(dir, 'index'),
    heldOut: path.join(dir, 'heldout.jsonl'),
    warmStart: path.join(dir, 'warm-start.jsonl'),
  };
}
