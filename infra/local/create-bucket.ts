/**
 * Creates a bucket if it is missing, so a fresh local MinIO is usable without the `mc` client.
 * CLI: `tsx infra/local/create-bucket.ts BUCKET` with S3_ENDPOINT and AWS credentials in the environment.
 */
import { CreateBucketCommand, HeadBucketCommand, type S3Client } from '@aws-sdk/client-s3';
import { createS3Client } from '../../activities/clients/storage/s3';

export async function ensureBucket(client: S3Client, bucket: string): Promise<'created' | 'exists'> {
  try {
    await client.send(new HeadBucketCommand({ Bucket: bucket }));
    return 'exists';
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404) throw err;
  }
  try {
    await client.send(new CreateBucketCommand({ Bucket: bucket }));
    return 'created';
  } catch (err) {
    if ((err as Error).name === 'BucketAlreadyOwnedByYou') return 'exists';
    throw err;
  }
}

async function main(): Promise<void> {
  const bucket = process.argv[2];
  const endpoint = process.env.S3_ENDPOINT;
  if (!bucket || !endpoint)
    throw new Error('usage: S3_ENDPOINT=http://host:port tsx infra/local/create-bucket.ts BUCKET');
  const client = createS3Client({ endpoint, region: process.env.AWS_REGION, maxAttempts: 3 });
  console.log(`bucket ${bucket} at ${endpoint}: ${await ensureBucket(client, bucket)}`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    console.error(String(err));
    process.exit(1);
  });
}
