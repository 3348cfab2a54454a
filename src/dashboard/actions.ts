/**
 * The dashboard's actions (POST /api/...): retry, cancel or remove a job, retry every dead job,
 * pause and resume a queue or one of its groups. The caller has checked the token, read-only and
 * the cross-site rules (handler.ts) before any of these runs.
 */
import { ValidationError } from '../errors.js';
import { HttpError, MAX_BODY_BYTES, type DashboardRequest, type Reply } from './exchange.js';
import { decodeSegment } from './paths.js';
import type { DashboardQueues } from './queues.js';
import { json } from './replies.js';

/** Run the action at `path`; a 404 HttpError for no such action, 409 when the job is not in a state it applies to. */
export async function act(queues: DashboardQueues, req: DashboardRequest, path: string): Promise<Reply> {
  await req.body(MAX_BODY_BYTES);
  const g = /^\/api\/queues\/([^/]+)\/groups\/([^/]+)\/(pause|resume)$/.exec(path);
  if (g) {
    const { queue } = await queues.get(decodeSegment(g[1]!));
    const group = decodeSegment(g[2]!);
    try {
      const changed = g[3] === 'pause' ? await queue.groups.pause(group) : await queue.groups.resume(group);
      return json(200, { ok: true, group, paused: g[3] === 'pause', changed });
    } catch (err) {
      if (err instanceof ValidationError) throw new HttpError(400, err.message);
      throw err;
    }
  }
  let m = /^\/api\/queues\/([^/]+)\/dead\/retry-all$/.exec(path);
  if (m) {
    const moved = await (await queues.get(decodeSegment(m[1]!))).queue.dead.retryAll();
    return json(200, { ok: true, moved });
  }
  m = /^\/api\/queues\/([^/]+)\/(pause|resume)$/.exec(path);
  if (m) {
    const { queue } = await queues.get(decodeSegment(m[1]!));
    if (m[2] === 'pause') await queue.pause();
    else await queue.resume();
    return json(200, { ok: true, paused: m[2] === 'pause' });
  }
  m = /^\/api\/queues\/([^/]+)\/jobs\/([^/]+)\/(retry|cancel|remove)$/.exec(path);
  if (!m) throw new HttpError(404, 'no such action');
  const { queue } = await queues.get(decodeSegment(m[1]!));
  const id = decodeSegment(m[2]!);
  switch (m[3]) {
    case 'retry': {
      const moved = await queue.dead.retry(id);
      if (moved === 0) throw new HttpError(409, `job '${id}' is not dead`);
      return json(200, { ok: true, moved });
    }
    case 'cancel': {
      if (!(await queue.cancel(id))) throw new HttpError(409, `job '${id}' is neither waiting nor running`);
      return json(200, { ok: true });
    }
    default: {
      // Remove deletes a dead job for good, or a waiting one (a cancel). A running job is left
      // alone (Cancel is the button for that); one that starts between the look and the cancel
      // is cancelled, which is what removing it meant.
      if (await queue.dead.remove(id)) return json(200, { ok: true });
      if ((await queue.get(id))?.state === 'scheduled' && (await queue.cancel(id)))
        return json(200, { ok: true });
      throw new HttpError(409, `job '${id}' is neither dead nor waiting`);
    }
  }
}
