// The buttons of a job (in its table row and in the inspector), by its state; shown only to a
// dashboard with actions on (a token, not read-only). queue-page.js handles their clicks.
import { el } from './dom.js';
import { boot } from './http.js';

/**
 * The buttons for a job in `state`: retry and remove a dead one, cancel a waiting or running one
 * (a flow's parent waiting for its children is cancelled with its waiting children).
 */
export function actionButtons(state, id) {
  if (!boot.canAct) return [];
  const b = (action, label, cls) =>
    el('button', { type: 'button', class: `small ${cls}`, 'data-action': action, 'data-id': id }, label);
  if (state === 'dead') return [b('retry', 'Retry', 'primary'), b('remove', 'Remove', 'ghost')];
  // A running job can be cancelled too: its holder's signal aborts (issue 15).
  if (state === 'scheduled' || state === 'waiting-children' || state === 'active') {
    return [b('cancel', 'Cancel', 'ghost')];
  }
  return [];
}
