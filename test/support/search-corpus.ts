import { writeFile } from 'node:fs/promises';

/** Ten documents on distinct topics; each also says something generic, so common words rank nothing. */
export const SEARCH_DOCS = [
  ['volcano', 'Mount Keltara', 'Mount Keltara is a stratovolcano whose basalt caldera erupted in 1783.'],
  ['violin', 'Amati workshop', 'The Amati workshop in Cremona carved spruce violin tops for Baroque courts.'],
  ['enzyme', 'Lactase', 'Lactase is an enzyme of the small intestine that hydrolyses lactose into glucose.'],
  [
    'comet',
    'Comet Halvorsen',
    'Comet Halvorsen has a perihelion inside the orbit of Mercury every 71 years.',
  ],
  ['chess', 'Sicilian Defence', 'The Sicilian Defence answers 1.e4 with c5, an asymmetrical chess opening.'],
  [
    'bridge',
    'Ostrava Bridge',
    'Ostrava Bridge is a cable-stayed crossing of the Oder with a 412 metre span.',
  ],
  ['pasta', 'Orecchiette', 'Orecchiette is an ear-shaped pasta from Apulia served with turnip greens.'],
  ['glacier', 'Vatna Tongue', 'The Vatna Tongue glacier retreated 3 kilometres since moraine surveys began.'],
  ['opera', 'Lucrezia', 'Lucrezia is an opera in three acts premiered at La Fenice by a soprano troupe.'],
  ['cipher', 'Playfair', 'The Playfair cipher encrypts digraphs with a five by five keyed letter square.'],
].map(([id, title, fact]) => ({
  id: id as string,
  title,
  text: `${fact} This is an article about the subject, which many people find interesting to read.`,
}));

/** Writes documents as a JSONL corpus file and returns its path. */
export async function writeJsonl(file: string, docs: readonly object[]): Promise<string> {
  await writeFile(file, docs.map((d) => JSON.stringify(d)).join('\n'));
  return file;
}
