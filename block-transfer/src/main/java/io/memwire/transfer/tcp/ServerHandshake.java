package io.memwire.transfer.tcp;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The serving side of the tcp handshake of one {@link ResponderSession}, and the session's one
 * state ({@code HELLO}, {@code AUTH}, then {@code SERVING}; {@code CLOSED} from any of them). It
 * reads the client's HELLO and proof, answers with the CHALLENGE and WELCOME (handed to the session
 * to send), and takes a serving slot for an authenticated peer.
 *
 * <p>Threads: everything runs on the session's loop except {@link ResponderSession#evict}'s state
 * change, a compare-and-set from a handshake state to {@code CLOSED} on the acceptor's thread. The
 * state is changed only by compare-and-set, so the acceptor may evict a session only while it is
 * still in {@code HELLO} or {@code AUTH}, and a session that authenticates first keeps its place
 * (the acceptor's eviction then fails and it picks another). While in its handshake the session is
 * on the provider's books of handshakes, by source address. The nonces are touched on the loop
 * only.
 */
final class ServerHandshake {
  // The session's logger, so its log lines keep their category.
  private static final Logger LOG = LoggerFactory.getLogger(ResponderSession.class);

  /** The session's one state. */
  enum State {
    /** Accepted, waiting for the client's HELLO: in the handshake. */
    HELLO,
    /** CHALLENGE sent, waiting for the client's proof: in the handshake. */
    AUTH,
    SERVING,
    /** Closed, evicted or refused (possibly still flushing the refusal). */
    CLOSED;

    boolean inHandshake() {
      return this == HELLO || this == AUTH;
    }
  }

  private final TcpProvider provider;
  private final ResponderSession session;
  private final String remote;

  /**
   * The one state, written on the loop except for the acceptor's eviction (a compare-and-set from a
   * handshake state to {@code CLOSED}).
   */
  private final AtomicReference<State> state = new AtomicReference<>(State.HELLO);

  private byte[] clientNonce;
  private byte[] serverNonce;

  ServerHandshake(TcpProvider provider, ResponderSession session, String remote) {
    this.provider = provider;
    this.session = session;
    this.remote = remote;
  }

  /** The session's state; readable from any thread. */
  State state() {
    return state.get();
  }

  /** Whether the session is still in its handshake; readable from any thread. */
  boolean inHandshake() {
    return state.get().inHandshake();
  }

  /**
   * Moves the session out of its handshake ({@code HELLO} or {@code AUTH}) to {@code to}, and off
   * the provider's books of handshakes.
   *
   * @return false when it was not in its handshake (another thread evicted it, or it left before)
   */
  boolean leaveHandshake(State to) {
    while (true) {
      State s = state.get();
      if (!s.inHandshake()) {
        return false;
      }
      if (state.compareAndSet(s, to)) {
        provider.sessions().handshakeEnded(session);
        return true;
      }
    }
  }

  /**
   * Closes the state from whatever it was, taking the session off the provider's books of
   * handshakes if it was still in one.
   *
   * @return the state it was in
   */
  State close() {
    State was = state.getAndSet(State.CLOSED);
    if (was.inHandshake()) {
      provider.sessions().handshakeEnded(session);
    }
    return was;
  }

  /** Moves a session still in its handshake from {@code HELLO} to {@code AUTH}. */
  private boolean awaitProof() {
    return state.compareAndSet(State.HELLO, State.AUTH);
  }

  /**
   * Reads the next handshake message from {@code in} if all of it has arrived.
   *
   * @return false when {@code in} does not hold the whole message yet (nothing is read)
   */
  boolean step(ByteBuffer in, State st) {
    if (st == State.HELLO) {
      if (in.remaining() < Handshake.HELLO_SIZE) {
        return false;
      }
      hello(in);
    } else {
      if (in.remaining() < Handshake.AUTH_SIZE) {
        return false;
      }
      auth(in);
    }
    return true;
  }

  private void hello(ByteBuffer in) {
    int magic = in.getInt();
    short version = in.getShort();
    in.getShort(); // client flags: whether it has a secret; the server's own setting decides
    clientNonce = new byte[Handshake.NONCE_SIZE];
    in.get(clientNonce);
    if (magic != Handshake.MAGIC) {
      session.protocolViolation("bad handshake magic 0x" + Integer.toHexString(magic));
      return;
    }
    serverNonce = Handshake.nonce();
    if (version != Handshake.VERSION) {
      if (leaveHandshake(State.CLOSED)) {
        session.send(Handshake.challenge(Handshake.STATUS_BAD_VERSION, false, serverNonce, null));
        session.closeAfterFlush();
      }
      LOG.debug("refused {}: protocol version {}", remote, version);
      return;
    }
    byte[] secret = provider.secret();
    if (secret == null) {
      endHandshake(
          Handshake.challenge(Handshake.STATUS_OK, false, serverNonce, null), Handshake.STATUS_OK);
    } else if (awaitProof()) {
      session.send(
          Handshake.challenge(
              Handshake.STATUS_OK,
              true,
              serverNonce,
              Handshake.serverProof(secret, clientNonce, serverNonce)));
    }
  }

  /**
   * Ends a successful handshake: takes a serving slot (or is refused at maxConnections) unless the
   * acceptor evicted the session first; sends {@code prefix} (if any) and the WELCOME.
   */
  private void endHandshake(ByteBuffer prefix, byte okStatus) {
    boolean slot = provider.sessions().admitServing();
    if (!leaveHandshake(slot ? State.SERVING : State.CLOSED)) {
      if (slot) {
        provider.sessions().releaseServing(); // evicted just before: the loop closes it next
      }
      return;
    }
    session.admitted(slot);
    ByteBuffer welcome = Handshake.welcome(slot ? okStatus : Handshake.STATUS_BUSY);
    session.send(prefix == null ? welcome : concat(prefix, welcome));
    if (!slot) {
      session.closeAfterFlush();
    }
  }

  private void auth(ByteBuffer in) {
    byte[] proof = new byte[Handshake.AUTH_SIZE];
    in.get(proof);
    byte[] expected = Handshake.clientProof(provider.secret(), serverNonce, clientNonce);
    if (Handshake.same(proof, expected)) {
      // Only an authenticated peer takes a serving slot; one still in its handshake counts
      // against the provider's small handshake cap instead.
      endHandshake(null, Handshake.STATUS_OK);
    } else {
      provider.authFailures.increment();
      if (provider.authFailureLogged.compareAndSet(false, true)) {
        LOG.warn(
            "refused tcp transfer client {}: authentication failed (further ones are "
                + "counted as authFailures and logged at DEBUG)",
            remote);
      } else {
        LOG.debug("refused tcp transfer client {}: authentication failed", remote);
      }
      if (leaveHandshake(State.CLOSED)) {
        session.send(Handshake.welcome(Handshake.STATUS_AUTH_FAILED));
        session.closeAfterFlush();
      }
    }
  }

  static ByteBuffer concat(ByteBuffer a, ByteBuffer b) {
    ByteBuffer c = ByteBuffer.allocate(a.remaining() + b.remaining());
    return c.put(a).put(b).flip();
  }
}
