/**
 * TLS (issue 8, item 5): a redis-server with --tls-port (Debian's redis 7.0 build has TLS compiled
 * in), certificates made here with openssl. With verification on, the right CA connects and runs
 * a job end to end; a wrong CA, a wrong host name, and (with client authentication required) a
 * client without a certificate are refused, and nothing is written.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis, type RedisOptions } from 'ioredis';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { Queue, Worker } from '../../src/index.js';
import { uniqueQueue, waitFor } from '../support/fixtures.js';
import { freePort, startRedis, type RedisServer } from '../support/redis-server.js';
import { internals } from '../support/internals.js';

interface Pki {
  ca: string;
  wrongCa: string;
  clientCert: string;
  clientKey: string;
  dir: string;
}

function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA, a server certificate for localhost / 127.0.0.1 signed by it, a client certificate, and an unrelated CA. */
function makePki(): Pki {
  const dir = mkdtempSync(join(tmpdir(), 'delayq-tls-'));
  const ca = (name: string): void =>
    openssl(
      dir,
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-days',
      '2',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
    );
  const signed = (name: string, cn: string, ext: string): void => {
    openssl(
      dir,
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-sha256',
      '-subj',
      `/CN=${cn}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    writeFileSync(join(dir, `${name}.ext`), ext);
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-sha256',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    );
  };
  ca('ca');
  ca('wrong-ca');
  signed('server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  signed('client', 'delayq-worker', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string): string => readFileSync(join(dir, f), 'utf8');
  return {
    ca: read('ca.crt'),
    wrongCa: read('wrong-ca.crt'),
    clientCert: read('client.crt'),
    clientKey: read('client.key'),
    dir,
  };
}

let pki: Pki;
let server: RedisServer;
let tlsPort: number;
let mtls: RedisServer;
let mtlsPort: number;

beforeAll(async () => {
  pki = makePki();
  const tlsArgs = (port: number, authClients: 'yes' | 'no'): string[] => [
    '--tls-port',
    String(port),
    '--tls-cert-file',
    join(pki.dir, 'server.crt'),
    '--tls-key-file',
    join(pki.dir, 'server.key'),
    '--tls-ca-cert-file',
    join(pki.dir, 'ca.crt'),
    '--tls-auth-clients',
    authClients,
  ];
  // The plain port stays open on loopback for the readiness check and for reading state here.
  tlsPort = await freePort();
  server = await startRedis({ args: tlsArgs(tlsPort, 'no') });
  mtlsPort = await freePort();
  mtls = await startRedis({ args: tlsArgs(mtlsPort, 'yes') });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  await mtls?.stop();
  if (pki) rmSync(pki.dir, { recursive: true, force: true });
});

/** Connect once, without retries, and report how it went: 'PONG' or the error's code and message. */
async function tryConnect(options: RedisOptions): Promise<string> {
  const client = new Redis({
    ...options,
    lazyConnect: true,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
  });
  let firstError: Error | undefined;
  client.on('error', (err: Error) => (firstError ??= err));
  try {
    await client.connect();
    return await client.ping();
  } catch (err) {
    const e = firstError ?? (err as Error);
    return `${(e as Error & { code?: string }).code ?? ''} ${e.message}`;
  } finally {
    client.disconnect();
  }
}

describe('TLS with verification on', () => {
  test('the right CA connects; a job is added and run over TLS end to end', async () => {
    const tls = { ca: pki.ca };
    expect(await tryConnect({ host: '127.0.0.1', port: tlsPort, tls })).toBe('PONG');
    const name = uniqueQueue('tls');
    const connection: RedisOptions = { host: '127.0.0.1', port: tlsPort, tls };
    const queue = new Queue<string>(name, { connection });
    const ran: string[] = [];
    const worker = new Worker<string>(name, async (job) => void ran.push(job.payload), { connection });
    try {
      await worker.waitUntilReady();
      await queue.add('over tls', { delay: 50 });
      await waitFor(() => ran.length > 0, { what: 'the job run over TLS' });
      expect(ran).toEqual(['over tls']);
      await waitFor(async () => (await queue.counts()).active === 0, { what: 'the ack' });
      expect(await queue.counts()).toEqual({
        scheduled: 0,
        due: 0,
        held: 0,
        active: 0,
        dead: 0,
        completed: 1,
        cancelled: 0,
        waitingChildren: 0,
      });
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  test('a rediss:// URL verifies against the system CAs, so this private CA is refused', async () => {
    const result = await tryConnect({ host: '127.0.0.1', port: tlsPort, tls: {} });
    expect(result).toMatch(
      /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/,
    );
  });

  test('a wrong CA is refused, and a queue on it writes nothing', async () => {
    const tls = { ca: pki.wrongCa };
    expect(await tryConnect({ host: '127.0.0.1', port: tlsPort, tls })).toMatch(
      /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|certificate/i,
    );
    const name = uniqueQueue('wrong-ca');
    const queue = new Queue<string>(name, {
      connection: {
        host: '127.0.0.1',
        port: tlsPort,
        tls,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      },
    });
    internals(queue).client.on('error', () => {});
    try {
      await expect(queue.add('never')).rejects.toThrow();
    } finally {
      await queue.close().catch(() => {});
    }
    const plain = new Redis(server.url);
    try {
      expect(await plain.keys(`dq:{${name}}:*`)).toEqual([]);
    } finally {
      await plain.quit();
    }
  });

  test('the right CA but the wrong host name is refused', async () => {
    const result = await tryConnect({
      host: '127.0.0.1',
      port: tlsPort,
      tls: { ca: pki.ca, servername: 'redis.example.com' },
    });
    expect(result).toMatch(/ERR_TLS_CERT_ALTNAME_INVALID|does not match|altnames/i);
  });

  test('with client authentication required: no client certificate is refused, the CA-signed one connects', async () => {
    const without = await tryConnect({ host: '127.0.0.1', port: mtlsPort, tls: { ca: pki.ca } });
    expect(without).not.toBe('PONG');
    const withCert = await tryConnect({
      host: '127.0.0.1',
      port: mtlsPort,
      tls: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey },
    });
    expect(withCert).toBe('PONG');
  });
});
