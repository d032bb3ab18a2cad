import { installContext } from '../../../src/telemetry/index.js';
installContext();
import { inboundContext, getSession, sessionEnv, createSession, parseSessionKey } from '../../../src/index.js';
import { propagation } from '@opentelemetry/api';
const r = inboundContext({ baggage: 'foo=bar,chat.id=x' }, { keepBaggage: true });
console.log('keep true entries', propagation.getBaggage(r.context)?.getAllEntries(), r.droppedBaggage);
const r2 = inboundContext({ baggage: ['foo=bar', 42 as any] }, { keepBaggage: true });
console.log('nonstring', r2.droppedBaggage);
console.log(inboundContext({ baggage: '%zz=1,a=%E0%A4%A' }, {keepBaggage:true}).droppedBaggage);
try { console.log('toString', sessionEnv('toString' as any)); } catch (e) { console.log('threw', (e as any).code); }
try { console.log('ctor', sessionEnv('constructor' as any, 'fb')); } catch (e) { console.log('threw', (e as any).code); }
for (const v of ['a\u0085b', 'a\u2028b', 'a\ud800b', 'a\udc00', '\ud83d\ude00ok']) {
  try { createSession({ platform: 'p', chatType: 'dm', chatId: v }); console.log('ok', JSON.stringify(v)); } catch (e) { console.log('rej', JSON.stringify(v), (e as any).code); }
}
console.log(parseSessionKey('v1::bogus::::'.slice(0, -1)));
