import { createHash } from 'node:crypto';

/**
 * A set of 64-bit fingerprints (the first 8 bytes of a SHA-256) kept in typed arrays: 16 to 32 bytes a member
 * instead of about 100 for a Set of digest strings, so deduplicating the documents of a corpus of tens of
 * millions fits in a worker. Two different values share a fingerprint with probability about n²/2⁶⁵
 * (10⁻⁵ at 20 million documents); the one affected would be dropped as a duplicate.
 */
export type Fingerprint = readonly [hi: number, lo: number];

export function fingerprint(value: string): Fingerprint {
  const digest = createHash('sha256').update(value).digest();
  // (x, 0) marks an empty slot.
  return [digest.readUInt32LE(0), digest.readUInt32LE(4) || 1];
}

export class FingerprintSet {
  private hi = new Uint32Array(1024);
  private lo = new Uint32Array(1024);
  private count = 0;

  has([hi, lo]: Fingerprint): boolean {
    const mask = this.lo.length - 1;
    for (let i = lo & mask; this.lo[i] !== 0; i = (i + 1) & mask) {
      if (this.lo[i] === lo && this.hi[i] === hi) return true;
    }
    return false;
  }

  add([hi, lo]: Fingerprint): void {
    if (!this.insert(hi, lo)) return;
    this.count++;
    if (this.count * 2 > this.lo.length) this.grow();
  }

  get size(): number {
    return this.count;
  }

  private insert(hi: number, lo: number): boolean {
    const mask = this.lo.length - 1;
    for (let i = lo & mask; ; i = (i + 1) & mask) {
      if (this.lo[i] === 0) {
        this.hi[i] = hi;
        this.lo[i] = lo;
        return true;
      }
      if (this.lo[i] === lo && this.hi[i] === hi) return false;
    }
  }

  private grow(): void {
    const [hi, lo] = [this.hi, this.lo];
    this.hi = new Uint32Array(lo.length * 2);
    this.lo = new Uint32Array(lo.length * 2);
    for (let i = 0; i < lo.length; i++) if (lo[i] !== 0) this.insert(hi[i] as number, lo[i] as number);
  }
}
