/** Prints the dev server's `--search-attribute` flags, one per line, for `temporal.sh`. */
import { searchAttributeFlags } from '../temporal/search-attributes';

console.log(searchAttributeFlags().join('\n'));
