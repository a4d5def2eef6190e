/**
 * TensorBoard's event file format, written without TensorFlow: TFRecord framing (length and data, each with a
 * masked CRC-32C) around `tensorflow.Event` protocol buffers, encoded by hand for the few fields a scalar or
 * a histogram summary needs (tensorboard/compat/proto/event.proto, summary.proto).
 */

/** One event: a scalar or histogram summary at a step. */
export interface SummaryEvent {
  wallTime: number;
  step: number;
  scalars: Record<string, number>;
  histograms: Record<string, number[]>;
}

/** An event file: the version record TensorBoard expects first, then one record per event. */
export function eventFile(events: readonly SummaryEvent[], wallTime: number): Buffer {
  const version = message([double(1, wallTime), bytes(3, Buffer.from('brain.Event:2'))]);
  return Buffer.concat([version, ...events.map(summaryEvent)].map(record));
}

function summaryEvent(event: SummaryEvent): Buffer {
  const values = [
    ...Object.entries(event.scalars).map(([tag, v]) => message([text(1, tag), float(2, v)])),
    ...Object.entries(event.histograms).map(([tag, counts]) =>
      message([text(1, tag), bytes(5, histogram(counts))]),
    ),
  ];
  return message([
    double(1, event.wallTime),
    varint(2, event.step),
    bytes(5, message(values.map((v) => bytes(1, v)))),
  ]);
}

/** `counts[k]` observations of the value k, as a HistogramProto with one bucket per value. */
function histogram(counts: readonly number[]): Buffer {
  const seen = counts.flatMap((c, k) => (c > 0 ? [k] : []));
  const num = counts.reduce((a, c) => a + c, 0);
  const sum = counts.reduce((a, c, k) => a + c * k, 0);
  const squares = counts.reduce((a, c, k) => a + c * k * k, 0);
  return message([
    double(1, seen.length ? Math.min(...seen) : 0),
    double(2, seen.length ? Math.max(...seen) : 0),
    double(3, num),
    double(4, sum),
    double(5, squares),
    bytes(6, packedDoubles(counts.map((_, k) => k + 0.5))),
    bytes(7, packedDoubles(counts)),
  ]);
}

/** TFRecord framing: length, its masked CRC, the data, its masked CRC. */
function record(data: Buffer): Buffer {
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(data.length));
  return Buffer.concat([length, u32(maskedCrc(length)), data, u32(maskedCrc(data))]);
}

const u32 = (n: number): Buffer => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
};

const CRC32C_TABLE = Uint32Array.from({ length: 256 }, (_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32C (Castagnoli), as TFRecord uses it. */
export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32C_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

const maskedCrc = (data: Uint8Array): number => {
  const crc = crc32c(data);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
};

// Protocol buffer wire format: a key (field number and wire type) before each value.
const key = (field: number, wireType: number): Buffer => encodeVarint(BigInt((field << 3) | wireType));

function encodeVarint(value: bigint): Buffer {
  const out: number[] = [];
  let v = BigInt.asUintN(64, value);
  do {
    const low = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v ? low | 0x80 : low);
  } while (v);
  return Buffer.from(out);
}

const varint = (field: number, value: number): Buffer =>
  Buffer.concat([key(field, 0), encodeVarint(BigInt(value))]);

function double(field: number, value: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(value);
  return Buffer.concat([key(field, 1), b]);
}

function float(field: number, value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeFloatLE(value);
  return Buffer.concat([key(field, 5), b]);
}

const bytes = (field: number, value: Buffer): Buffer =>
  Buffer.concat([key(field, 2), encodeVarint(BigInt(value.length)), value]);

const text = (field: number, value: string): Buffer => bytes(field, Buffer.from(value, 'utf8'));

const message = (fields: readonly Buffer[]): Buffer => Buffer.concat(fields);

function packedDoubles(values: readonly number[]): Buffer {
  const b = Buffer.alloc(8 * values.length);
  values.forEach((v, i) => b.writeDoubleLE(v, 8 * i));
  return b;
}
