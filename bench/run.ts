/** `npm run bench -- <name>`: runs one benchmark; each prints its figures and a final `name value` line. */
const BENCHES: Record<string, () => Promise<void>> = {
  pipeline: async () => (await import('./pipeline')).main(),
  tails: async () => (await import('./tails')).main(process.argv.slice(3)),
  kernel: async () => (await import('./kernel')).main(process.argv.slice(3)),
  retriever: async () => (await import('./retriever')).main(),
  learning: async () => (await import('./learning')).main(process.argv.slice(3)),
  'reasoner-ceiling': async () => (await import('./reasoner-ceiling')).main(process.argv.slice(3)),
  'mae-judge': async () => (await import('./mae-judge')).main(process.argv.slice(3)),
  checker: async () => (await import('./checker')).main(),
  corpus: async () => (await import('./corpus')).main(),
  'large-batch': async () => (await import('./large-batch')).main(),
  storage: async () => (await import('./storage')).main(process.argv.slice(3)),
};

const name = process.argv[2];
const bench = name ? BENCHES[name] : undefined;
if (!bench) {
  console.error(`usage: npm run bench -- <${Object.keys(BENCHES).join('|')}>`);
  process.exit(2);
}
bench().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
