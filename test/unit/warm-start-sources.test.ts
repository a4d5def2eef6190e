import path from 'node:path';
import { relativeImports, warmStartSources } from '../../infra/toy-world/warm-start-sources';

const KERNEL = path.resolve(__dirname, '../../infra/kernels/selfplay_kernel');

describe("the warm start's sources, which a toy world's cache hash covers", () => {
  it('reads relative imports, at the top or inside a function, and not absolute ones', () => {
    const source = [
      'from __future__ import annotations',
      'import torch',
      'from .chat import encode_completion, encode_prompt',
      'from .encoding.rows import Trajectory',
      'def f():',
      '    from .sampler import Row',
      'from . import tiny, losses as l',
      'from selfplay_kernel.app import create_app',
    ].join('\n');
    expect(relativeImports(source)).toEqual(['chat', 'encoding', 'sampler', 'tiny', 'losses']);
  });

  it("covers warm_start.py and the training code it imports, through other modules, and not the kernel's routes", () => {
    const names = warmStartSources(KERNEL).map((f) => path.basename(f));
    expect(names).toContain('warm_start.py');
    for (const used of ['chat.py', 'tiny.py', 'scoring.py', 'encoding.py']) expect(names).toContain(used);
    expect(names).not.toContain('app.py');
    expect(names).toEqual([...names].sort());
  });

  it("covers the word tokenizer's warm start as warm_start.py's and word_tokenizer.py, which the others' leave out", () => {
    const words = warmStartSources(KERNEL, 'word_tokenizer');
    expect(words).toEqual([...warmStartSources(KERNEL), path.join(KERNEL, 'word_tokenizer.py')].sort());
    expect(warmStartSources(KERNEL).map((f) => path.basename(f))).not.toContain('word_tokenizer.py');
  });
});
