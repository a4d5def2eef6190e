import type { Hit } from './bm25';

/** Rows of equal length as one little-endian Float32 buffer (4 bytes per value, no header). */
export function encodeVectors(rows: readonly Float32Array[]): Buffer {
  const out = Buffer.alloc(rows.reduce((n, r) => n + r.length * 4, 0));
  let offset = 0;
  for (const row of rows) for (const x of row) offset = out.writeFloatLE(x, offset);
  return out;
}

/** The buffer `encodeVectors` wrote, as one flat array of `rows × dimensions` values. */
export function decodeVectors(body: Buffer, rows: number, dimensions: number): Float32Array {
  if (body.length !== rows * dimensions * 4) {
    throw new Error(
      `vector file holds ${body.length} bytes, expected ${rows} × ${dimensions} float32 (${rows * dimensions * 4})`,
    );
  }
  const flat = new Float32Array(rows * dimensions);
  for (let i = 0; i < flat.length; i++) flat[i] = body.readFloatLE(i * 4);
  return flat;
}

/**
 * Exact nearest neighbours by dot product (the cosine similarity, rows and query being unit length): one
 * pass over the matrix, keeping the best `topK` in a small sorted list.
 */
export function topKByDot(
  matrix: Float32Array,
  dimensions: number,
  query: Float32Array,
  topK: number,
): Hit[] {
  const best: Hit[] = [];
  if (topK <= 0) return best;
  const rows = matrix.length / dimensions;
  for (let row = 0; row < rows; row++) {
    let score = 0;
    const base = row * dimensions;
    for (let d = 0; d < dimensions; d++) score += (matrix[base + d] as number) * (query[d] as number);
    if (best.length === topK && score <= (best[topK - 1] as Hit).score) continue;
    let at = best.length;
    while (at > 0 && (best[at - 1] as Hit).score < score) at--;
    best.splice(at, 0, { index: row, score });
    if (best.length > topK) best.pop();
  }
  return best;
}
