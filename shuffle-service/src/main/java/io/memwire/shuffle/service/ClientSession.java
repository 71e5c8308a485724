package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.Frames;
import io.memwire.shuffle.protocol.ServiceProtocol;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.Map;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One executor's connection to the service, served on its own daemon thread ({@code
 * memwire-shuffle-service-client-N}): REGISTER first, then PUBLISH, REMOVE_SHUFFLE and STATS
 * requests answered in order (STATS, counters only, is answered unregistered too). A malformed
 * frame or an unknown request closes this connection only; no error of one client reaches another
 * or the service.
 *
 * <p>Deadlines, enforced by the service's deadline thread through {@link #overdue}: the connection
 * must register within {@code registerTimeout} of its accept; a frame whose first byte came must be
 * complete within {@code frameTimeout}, and an answer must be taken within it. Waiting between
 * requests of a registered executor has no deadline.
 */
final class ClientSession implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(ClientSession.class);

  /** Application and executor ids become directory names: nothing that could leave the tree. */
  static final Pattern ID = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,127}");

  private final ShuffleService service;
  private final SocketChannel channel;
  private final UserPrincipal peerUser;
  private final long registerDeadlineNanos;
  private final long frameTimeoutNanos;
  private Application app;
  private String executor;

  /** Nanos by which the current step must be done; {@link Long#MIN_VALUE}: none. */
  private volatile long deadlineNanos;

  private volatile String deadlineWhat = "register";

  ClientSession(
      ShuffleService service,
      SocketChannel channel,
      UserPrincipal peerUser,
      long registerDeadlineNanos) {
    this.service = service;
    this.channel = channel;
    this.peerUser = peerUser;
    this.registerDeadlineNanos = registerDeadlineNanos;
    this.frameTimeoutNanos = service.config().frameTimeout().toNanos();
    this.deadlineNanos = registerDeadlineNanos;
  }

  SocketChannel channel() {
    return channel;
  }

  /** The local user on the other end (peer credentials). */
  UserPrincipal user() {
    return peerUser;
  }

  /** What is overdue at {@code nowNanos}, or null. */
  String overdue(long nowNanos) {
    long d = deadlineNanos;
    if (d == Long.MIN_VALUE || nowNanos - d < 0) {
      return null;
    }
    return "did not " + deadlineWhat + " in time";
  }

  private void expect(String what, long timeoutNanos) {
    long d = System.nanoTime() + timeoutNanos;
    if (app == null && d - registerDeadlineNanos > 0) {
      d = registerDeadlineNanos; // nothing extends the time to register
      what = "register";
    }
    deadlineWhat = what;
    deadlineNanos = d;
  }

  private void idle() {
    if (app == null) {
      deadlineWhat = "register";
      deadlineNanos = registerDeadlineNanos;
    } else {
      deadlineNanos = Long.MIN_VALUE;
    }
  }

  @Override
  public void run() {
    try {
      ServiceProtocol.In req;
      while ((req = Frames.read(channel, () -> expect("send a whole frame", frameTimeoutNanos)))
          != null) {
        idle(); // handling may take long (linking, registering): that is the service's time
        ServiceProtocol.Out answer = handle(req);
        expect("take its answer", frameTimeoutNanos);
        Frames.write(channel, answer);
        idle();
        if (answer.isError() && app == null) {
          break; // a refused registration ends the connection
        }
      }
    } catch (IOException e) {
      if (!service.isClosed()) {
        LOG.debug("client {} of {}: connection closed: {}", executor, appKey(), e.toString());
      }
    } catch (RuntimeException | Error e) {
      // One client's failure (a bug, or memory exhaustion) costs only its connection.
      LOG.warn("client {} of {}: {}; connection closed", executor, appKey(), e.toString(), e);
    } finally {
      if (app != null) {
        service.quotas().returnApplicationClient(app.key);
      }
      service.sessionEnded(this);
    }
  }

  private String appKey() {
    return app == null ? "(unregistered)" : app.key.toString();
  }

  private ServiceProtocol.Out handle(ServiceProtocol.In req) throws IOException {
    if (app == null
        && req.type() != ServiceProtocol.REGISTER
        && req.type() != ServiceProtocol.STATS) {
      return error(ServiceProtocol.E_NOT_REGISTERED, "REGISTER must come first");
    }
    switch (req.type()) {
      case ServiceProtocol.REGISTER:
        return register(req);
      case ServiceProtocol.PUBLISH:
        return publish(req);
      case ServiceProtocol.REMOVE_SHUFFLE:
        {
          int shuffleId = req.i32();
          req.end();
          service.removeShuffle(app, shuffleId);
          return new ServiceProtocol.Out(ServiceProtocol.OK);
        }
      case ServiceProtocol.STATS:
        {
          req.end();
          Map<String, Long> stats = service.stats();
          ServiceProtocol.Out out = new ServiceProtocol.Out(ServiceProtocol.OK).u16(stats.size());
          stats.forEach((k, v) -> out.str(k).i64(v));
          return out;
        }
      default:
        throw new IOException("unknown request type " + req.type());
    }
  }

  private ServiceProtocol.Out register(ServiceProtocol.In req) throws IOException {
    if (app != null) {
      return error(ServiceProtocol.E_BAD_REQUEST, "this connection is registered already");
    }
    int version = req.u16();
    if (version != ServiceProtocol.VERSION) {
      return error(
          ServiceProtocol.E_BAD_REQUEST,
          "protocol version "
              + version
              + " not supported (service speaks "
              + ServiceProtocol.VERSION
              + ")");
    }
    String application = req.str();
    String exec = req.str();
    byte[] token = req.bytes();
    String driverHost = req.str();
    int driverPort = req.u16();
    req.end();
    if (!ID.matcher(application).matches() || !ID.matcher(exec).matches()) {
      return error(
          ServiceProtocol.E_BAD_REQUEST, "application and executor ids must match " + ID.pattern());
    }
    if (token.length < 16) {
      return error(ServiceProtocol.E_BAD_REQUEST, "application token shorter than 16 bytes");
    }
    if (driverHost.isEmpty() || driverPort == 0) {
      return error(ServiceProtocol.E_BAD_REQUEST, "the driver's RPC address is missing");
    }
    Application a;
    try {
      a = service.register(peerUser, application, token, driverHost, driverPort);
    } catch (Refused e) {
      return error(e.code, e.getMessage());
    }
    String refusal = service.quotas().takeApplicationClient(a.key, application);
    if (refusal != null) {
      return error(ServiceProtocol.E_QUOTA, refusal);
    }
    app = a;
    executor = exec;
    LOG.debug("executor {} of {} registered (user {})", exec, application, peerUser);
    return new ServiceProtocol.Out(ServiceProtocol.OK);
  }

  private ServiceProtocol.Out publish(ServiceProtocol.In req) throws IOException {
    int shuffleId = req.i32();
    int mapIndex = req.i32();
    long mapId = req.i64();
    String index = req.str();
    String data = req.str();
    String checksums = req.str();
    req.end();
    if (shuffleId < 0 || mapIndex < 0 || mapId < 0 || index.isEmpty()) {
      return error(ServiceProtocol.E_BAD_REQUEST, "bad shuffle id, map index, map id or path");
    }
    try {
      DirectoryPointer p =
          service.publish(
              app,
              executor,
              shuffleId,
              mapIndex,
              mapId,
              Path.of(index),
              data.isEmpty() ? null : Path.of(data),
              checksums.isEmpty() ? null : Path.of(checksums));
      ServiceProtocol.Out out =
          new ServiceProtocol.Out(ServiceProtocol.OK)
              .i32(p.chunk())
              .i32(p.entries())
              .u8(ServiceProtocol.layout(p));
      out.raw(p.region().toBytes());
      return out;
    } catch (Refused e) {
      return error(e.code, e.getMessage());
    } catch (java.nio.file.InvalidPathException e) {
      return error(ServiceProtocol.E_BAD_OUTPUT, "not a path: " + e.getMessage());
    }
  }

  private static ServiceProtocol.Out error(int code, String message) {
    String m = message.length() > 1000 ? message.substring(0, 1000) : message;
    return new ServiceProtocol.Out(ServiceProtocol.ERROR).u8(code).str(m);
  }
}
