// The throwaway redis-server helper lives in the package (delayq/testing); tests use the same one.
export * from '../../src/testing/redis-server.js';
