// The delayq dashboard page (an ES module; its parts sit beside it): polls the JSON API every two
// seconds while the tab is visible, and draws the start page (queues-page.js) or one queue's page
// (queue-page.js).
/* global document, setTimeout, clearTimeout */
import { boot } from './http.js';
import { refreshQueue, wireQueuePage } from './queue-page.js';
import { refreshQueues } from './queues-page.js';

const REFRESH_MS = 2000;

let timer;
function loop(fn) {
  const tick = async () => {
    if (!document.hidden) await fn();
    timer = setTimeout(tick, REFRESH_MS);
  };
  void tick();
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) {
      clearTimeout(timer);
      void tick();
    }
  });
}

if (boot.queue === null) loop(refreshQueues);
else {
  wireQueuePage();
  loop(refreshQueue);
}
