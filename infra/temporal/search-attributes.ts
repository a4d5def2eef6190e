import type { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import {
  encodeSearchAttributeIndexedValueType,
  type SearchAttributeKey,
} from '@temporalio/common/lib/search-attributes';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

type Key = SearchAttributeKey<SearchAttributeType>;

/** The type names `temporal server start-dev --search-attribute NAME=TYPE` accepts. */
const CLI_TYPE_NAMES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** Dev-server flags registering the project's attributes at start, so a fresh server is ready for runs. */
export function searchAttributeFlags(keys: readonly Key[] = ALL_SEARCH_ATTRIBUTES): string[] {
  return keys.flatMap((key) => ['--search-attribute', `${key.name}=${CLI_TYPE_NAMES[key.type]}`]);
}

/**
 * Registers the attributes on a server that was started without them (TEMPORAL_ADDRESS pointing at a shared
 * server). Idempotent; fails naming the attribute when one exists with another type.
 */
export async function ensureSearchAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
  keys: readonly Key[] = ALL_SEARCH_ATTRIBUTES,
): Promise<void> {
  const missing = await missingAttributes(connection, namespace, keys);
  if (missing.length === 0) return;
  try {
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, indexedValueType(k)])),
    });
  } catch (err) {
    // Another worker may have registered them between our list and add; only a remaining gap is an error.
    const stillMissing = await missingAttributes(connection, namespace, keys);
    if (stillMissing.length > 0) {
      throw new Error(
        `cannot register search attributes ${stillMissing.map((k) => k.name).join(', ')} in namespace ${namespace}: ${String(err)}`,
        { cause: err },
      );
    }
  }
}

async function missingAttributes(
  connection: Pick<Connection, 'operatorService'>,
  namespace: string,
  keys: readonly Key[],
): Promise<Key[]> {
  const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace });
  return keys.filter((key) => {
    const existing = customAttributes[key.name];
    if (existing === undefined) return true;
    if (existing !== indexedValueType(key)) {
      throw new Error(
        `search attribute ${key.name} exists in namespace ${namespace} with another type than ${key.type}; ` +
          `remove it (temporal operator search-attribute remove --name ${key.name}) or use another namespace`,
      );
    }
    return false;
  });
}

function indexedValueType(key: Key): NonNullable<ReturnType<typeof encodeSearchAttributeIndexedValueType>> {
  const encoded = encodeSearchAttributeIndexedValueType(key.type);
  if (encoded === undefined) throw new Error(`search attribute ${key.name} has an unknown type ${key.type}`);
  return encoded;
}
