package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.protocol.ResolveClient;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.RemoteRegion;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Answers RESOLVE ({@link ServiceProtocol}): which directory chunk replaced one a reader's pointer
 * names from before the service restarted. {@link Recovery} tells it, for each output taken back,
 * the region keys its chunk had in earlier runs (kept in the store); a request naming one of them,
 * for the same application, shuffle and chunk index, with a MAC of that application's token, gets
 * the chunk's pointer now. The reader then reads the slot as before and checks that it names the
 * map id it wants, so an output that was not taken back (its file changed) is a fetch failure,
 * never other bytes. Thread-safe; filled before the resolve port opens.
 */
final class PointerResolver {
  private static final Logger LOG = LoggerFactory.getLogger(PointerResolver.class);

  /** Where an old chunk key's outputs went: their application, executor, shuffle and chunk. */
  private record Target(Application app, String executor, int shuffleId, int chunk) {}

  private final Map<Long, Target> moved = new ConcurrentHashMap<>();
  private final ServiceCounters counters;

  PointerResolver(ServiceCounters counters) {
    this.counters = counters;
  }

  /** An output of {@code app} recorded under chunks with {@code oldKeys} is now in {@code now}. */
  void moved(
      long[] oldKeys, Application app, String executor, int shuffleId, DirectoryPointer now) {
    Target t = new Target(app, executor, shuffleId, now.chunk());
    for (long k : oldKeys) {
      moved.put(k, t);
    }
  }

  /** Old chunk keys known (logged when the resolve port opens). */
  int size() {
    return moved.size();
  }

  /**
   * Answers one RESOLVE frame: OK with the chunk's pointer now, or ERROR (bad request, denied, not
   * found). Counts both.
   */
  ServiceProtocol.Out answer(ServiceProtocol.In req, ByteBuffer signed) {
    try {
      DirectoryPointer p = resolve(req, signed);
      counters.pointersResolved.increment();
      return new ServiceProtocol.Out(ServiceProtocol.OK)
          .i32(p.chunk())
          .i32(p.entries())
          .u8(ServiceProtocol.layout(p))
          .raw(p.region().toBytes());
    } catch (Refused e) {
      counters.pointerResolvesRefused.increment();
      LOG.debug("RESOLVE refused: {}", e.getMessage());
      return new ServiceProtocol.Out(ServiceProtocol.ERROR).u8(e.code).str(e.getMessage());
    }
  }

  private DirectoryPointer resolve(ServiceProtocol.In req, ByteBuffer signed) throws Refused {
    String appId;
    int shuffleId;
    int chunk;
    RemoteRegion old;
    byte[] mac;
    try {
      int version = req.u16();
      if (version != ServiceProtocol.VERSION) {
        throw new IOException("protocol version " + version);
      }
      appId = req.str();
      shuffleId = req.i32();
      chunk = req.i32();
      old = RemoteRegion.fromBytes(req.bytes());
      ByteBuffer rest = req.rest();
      if (rest.remaining() != ResolveClient.MAC_BYTES) {
        throw new IOException("MAC of " + rest.remaining() + " bytes");
      }
      mac = new byte[ResolveClient.MAC_BYTES];
      rest.get(mac);
    } catch (IOException | IllegalArgumentException e) {
      throw new Refused(ServiceProtocol.E_BAD_REQUEST, "malformed RESOLVE: " + e.getMessage());
    }
    signed.limit(signed.limit() - ResolveClient.MAC_BYTES);
    Target t = old.segments().isEmpty() ? null : moved.get(old.segments().get(0).key());
    if (t == null) {
      throw new Refused(
          ServiceProtocol.E_NOT_FOUND,
          "no map output of shuffle " + shuffleId + " was taken back under that pointer");
    }
    if (!MessageDigest.isEqual(mac, t.app().resolveMac(signed))) {
      throw new Refused(
          ServiceProtocol.E_DENIED,
          "RESOLVE not authenticated: its MAC is not made with the token of the application the "
              + "pointer belongs to");
    }
    if (!t.app().key.id().equals(appId) || t.shuffleId() != shuffleId || t.chunk() != chunk) {
      throw new Refused(
          ServiceProtocol.E_DENIED,
          "the pointer belongs to another application, shuffle or chunk than the request names");
    }
    DirectoryPointer now = t.app().ended() ? null : t.app().pointer(t.executor(), shuffleId, chunk);
    if (now == null) {
      throw new Refused(
          ServiceProtocol.E_NOT_FOUND,
          "the outputs under that pointer are gone (shuffle removed or application ended)");
    }
    return now;
  }
}
