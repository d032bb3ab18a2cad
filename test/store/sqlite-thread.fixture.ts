// Opens a store, waits for one write and leaves it open: the process must wait for the
// answer it is owed, then end by itself once the store's thread is idle.
import { SqliteStore } from '../../src/store/sqlite-store.js';

const store = await SqliteStore.open(process.argv[2]!);
await store.messages.append({ id: 'm-1', routing: JSON.parse(process.argv[3]!), text: 'kept', receivedAt: 1 });
console.log('appended');
