import { parseArgs } from 'node:util';
import { announceAndServe, runMain } from '../serve-cli';
import { readObjectAtUri, writeObjectAtUri } from '../../../activities/clients/storage/index';
import { startRecordingTrainer } from './server';

/**
 * Starts the recording trainer as its own process, reading batches from file:// or s3:// URIs:
 *
 *   tsx test/support/recording-trainer/main.ts --port 0 [--host H] [--state-file PATH]
 *
 * Prints one JSON line `{"url": ..., "port": ...}` once listening; SIGTERM or SIGINT closes it.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      host: { type: 'string', default: '127.0.0.1' },
      'state-file': { type: 'string' },
    },
  });
  const trainer = await startRecordingTrainer({
    readBatch: readObjectAtUri,
    writeObject: writeObjectAtUri,
    port: Number(values.port),
    host: values.host,
    ...(values['state-file'] !== undefined ? { stateFile: values['state-file'] } : {}),
  });
  announceAndServe(trainer);
}

runMain(main);
