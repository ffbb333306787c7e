'use strict';
/**
 * The sockets of the etcd store's clients (js/etcd-store.cjs), so that closing a client closes them: grpc-js
 * never ends a connection attempt whose server accepted the TCP connection but never sent its HTTP/2
 * SETTINGS, even once its channel is closed.
 */
const path = require('node:path');

/** Binds `target`'s methods, so that a proxy's callers reach the real object. */
function forward(target, key) {
  const value = Reflect.get(target, key);
  return typeof value === 'function' ? value.bind(target) : value;
}

/**
 * The sockets of one etcd3 client, so that closing the client closes them. grpc-js never gives up on a
 * connection whose server accepted the TCP connection but never sent its HTTP/2 SETTINGS (a silent endpoint,
 * a SIGSTOPped member: grpc/grpc-node#2785), and closing the channel leaves that attempt, and its socket,
 * open for as long as the server keeps it (unref'd, so the process exits, but a long-lived process gathers
 * one per attempt and the server sees them all). The client's channels are made here
 * (`channelFactoryOverride`, a grpc-js client option etcd3 passes through `grpcOptions`) with the
 * credentials etcd3 chose, wrapped to note each socket they secure; each channel has its own subchannel
 * pool, so that no other client's connection is shared. `destroy()` destroys them, and any socket connected
 * later (a reconnection before etcd3's deferred close of a connecting channel). Without
 * `_createSecureConnector` (another grpc-js), the credentials are used as they are.
 */
class Sockets {
  #grpc;
  #open = new Set();
  #destroyed = false;

  /** @param {object} grpc the `@grpc/grpc-js` that etcd3 uses */
  constructor(grpc) {
    this.#grpc = grpc;
  }

  /** The `grpcOptions` of an etcd3 client whose sockets this tracks. */
  grpcOptions() {
    return {
      'grpc.use_local_subchannel_pool': 1,
      channelFactoryOverride: (target, credentials, options) => new this.#grpc.Channel(target, this.#wrap(credentials), options),
    };
  }

  #note(socket) {
    if (this.#destroyed) {
      socket.destroy();
      return;
    }
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
  }

  #wrap(credentials) {
    if (typeof credentials?._createSecureConnector !== 'function') return credentials;
    const secure = (...args) => {
      const connector = credentials._createSecureConnector(...args);
      const connect = (socket) => {
        this.#note(socket);
        return connector.connect(socket);
      };
      return new Proxy(connector, { get: (c, key) => (key === 'connect' ? connect : forward(c, key)) });
    };
    return new Proxy(credentials, { get: (c, key) => (key === '_createSecureConnector' ? secure : forward(c, key)) });
  }

  /** Destroys every socket of the client, and from now on each one it connects. */
  destroy() {
    this.#destroyed = true;
    for (const socket of this.#open) socket.destroy();
    this.#open.clear();
  }
}

/** The `@grpc/grpc-js` that `etcd3` loads (its dependency, wherever npm put it). */
function grpcOf() {
  return require(require.resolve('@grpc/grpc-js', { paths: [path.dirname(require.resolve('etcd3'))] }));
}

module.exports = { Sockets, grpcOf };
