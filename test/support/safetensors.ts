/**
 * Reads the float32 tensors of a safetensors file (the kernel's checkpoints keep trainable parameters in one):
 * an 8-byte little-endian header length, a JSON header naming each tensor's dtype, shape and byte range, then
 * the data. Enough for a test to compare two checkpoints' weights without Python.
 */
export function readSafetensors(bytes: Buffer): Map<string, Float32Array> {
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const tensors = new Map<string, Float32Array>();
  for (const [name, { dtype, data_offsets: offsets }] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (dtype !== 'F32') throw new Error(`tensor ${name} is ${dtype}; only F32 is read`);
    const data = bytes.subarray(8 + headerLength + offsets[0], 8 + headerLength + offsets[1]);
    // A copy: a Float32Array over the file's buffer would need 4-byte alignment the header does not promise.
    tensors.set(name, new Float32Array(new Uint8Array(data).buffer));
  }
  return tensors;
}

/** The largest absolute difference between two sets of the same tensors; throws when they are not the same set. */
export function maxAbsDiff(a: Map<string, Float32Array>, b: Map<string, Float32Array>): number {
  const names = [...a.keys()].sort();
  if (JSON.stringify(names) !== JSON.stringify([...b.keys()].sort())) {
    throw new Error(
      `the checkpoints hold different tensors: ${names.join(',')} vs ${[...b.keys()].join(',')}`,
    );
  }
  let max = 0;
  for (const name of names) {
    const x = a.get(name)!;
    const y = b.get(name)!;
    if (x.length !== y.length)
      throw new Error(`tensor ${name} has ${x.length} values in one, ${y.length} in the other`);
    for (let i = 0; i < x.length; i++) max = Math.max(max, Math.abs(x[i]! - y[i]!));
  }
  return max;
}
