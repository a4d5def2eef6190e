import { normalise } from '../../../activities/retrieval/embeddings';
import { decodeVectors, encodeVectors, topKByDot } from '../../../activities/retrieval/vectors';

const unit = (...xs: number[]): Float32Array => normalise(Float32Array.from(xs));

describe('dense vectors', () => {
  test('round-trip through the Float32 file layout, row-major', () => {
    const rows = [Float32Array.from([1, -2.5, 3]), Float32Array.from([0.125, 4, -6])];
    const bytes = encodeVectors(rows);
    expect(bytes.length).toBe(2 * 3 * 4);
    expect(Array.from(decodeVectors(bytes, 2, 3))).toEqual([1, -2.5, 3, 0.125, 4, -6]);
    expect(() => decodeVectors(bytes, 3, 3)).toThrow('holds 24 bytes, expected 3 × 3 float32 (36)');
  });

  test('topK by cosine similarity: best first, at most k, exact scores', () => {
    const rows = [unit(1, 0), unit(0, 1), unit(1, 1), unit(-1, 0), unit(2, 1)];
    const matrix = decodeVectors(encodeVectors(rows), rows.length, 2);
    const hits = topKByDot(matrix, 2, unit(1, 0.1), 3);
    expect(hits.map((h) => h.index)).toEqual([0, 4, 2]);
    expect(hits[0]?.score).toBeCloseTo(1 / Math.sqrt(1.01), 6);
    expect(topKByDot(matrix, 2, unit(1, 0.1), 10)).toHaveLength(5);
    expect(topKByDot(matrix, 2, unit(1, 0.1), 0)).toEqual([]);
  });

  test('normalise scales to unit length and leaves a zero vector alone', () => {
    expect(Array.from(unit(3, 4))).toEqual([Math.fround(0.6), Math.fround(0.8)]);
    expect(Array.from(unit(0, 0))).toEqual([0, 0]);
  });
});
