import { createS3Client, S3Store } from '../../activities/clients/storage';
import { PermanentReadError } from '../../activities/lib/errors';

/**
 * Whole objects by `s3://bucket/key` URI on one S3 endpoint (a test's own MinIO, which the environment's
 * S3_ENDPOINT does not name), with the environment's credentials: what the recording trainer reads batches
 * and writes checkpoints with, and the test's view of the run's storage.
 */
export function s3ObjectIo(endpoint: string) {
  const client = createS3Client({ endpoint, maxAttempts: 1 });
  const parts = (uri: string): { bucket: string; path: string } => {
    const [bucket = '', ...rest] = uri.replace(/^s3:\/\//, '').split('/');
    return { bucket, path: rest.join('/') };
  };
  const object = (uri: string): { store: S3Store; key: string } => {
    const { bucket, path } = parts(uri);
    return { store: new S3Store({ bucket, client }), key: path };
  };
  return {
    /** The store under `s3://bucket/prefix`. */
    store: (uri: string): S3Store => {
      const { bucket, path } = parts(uri);
      return new S3Store({ bucket, prefix: path, client });
    },
    read: async (uri: string): Promise<Buffer> => {
      const { store, key } = object(uri);
      const body = await store.get(key);
      if (body === undefined) throw new PermanentReadError(`no object at ${uri}`);
      return body;
    },
    write: (uri: string, body: string | Buffer): Promise<void> => {
      const { store, key } = object(uri);
      return store.put(key, body);
    },
  };
}
