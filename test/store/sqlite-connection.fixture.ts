// Opens a store and leaves it open. `idle`: asks nothing. `writes`: waits for one write,
// then, the connection idle again, for a read. Either way the process must wait for every
// answer it is owed, then end by itself.
import { SqliteStore } from '../../src/store/sqlite-store.js';

const [path, mode, routing] = process.argv.slice(2) as [string, 'idle' | 'writes', string];
const store = await SqliteStore.open(path);
if (mode === 'writes') {
  await store.messages.accept(
  { id: 'm-1', routing: JSON.parse(routing), text: 'kept', receivedAt: 1 },
  { destination: { platform: 'webhook', chatId: 'c:1' }, maxOpenPerDestination: 10, maxOpenTotal: 10 },
);
  await new Promise((resolve) => setImmediate(resolve));
  console.log(`pending ${(await store.messages.pending()).length}`);
} else {
  console.log('opened');
}
