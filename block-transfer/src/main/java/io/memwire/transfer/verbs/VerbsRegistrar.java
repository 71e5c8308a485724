package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.IbvPd;
import com.ibm.disni.verbs.SVCRegMr;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.metrics.Metric;
import io.memwire.transfer.metrics.TransportMetrics;
import io.memwire.transfer.spi.ProviderRegistration;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Registers memory with the NIC in the node's protection domain (buffers, and file regions with
 * their fallbacks) and keeps every registration until it is released, so the provider can free the
 * leftovers at close. Thread-safe: registrations are tracked in a concurrent set.
 */
final class VerbsRegistrar {
  // The provider's logger name, so these messages read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(VerbsProvider.class);

  /** What a registration is for; decides its access flags. */
  enum Use {
    /** A pool buffer reads land in. */
    DESTINATION,
    /** A caller's buffer served to peers (it may also be a read destination on RoCE and IB). */
    SERVED,
    /** A file mapping served to peers. */
    FILE
  }

  /** How a file region ended up registered. */
  enum FilePath {
    READ_ONLY_MAPPING(TransportMetrics.VERBS_FILE_REGIONS_READ_ONLY_MAPPING),
    SHARED_MAPPING(TransportMetrics.VERBS_FILE_REGIONS_SHARED_MAPPING),
    PRIVATE_COPY(TransportMetrics.VERBS_FILE_REGIONS_PRIVATE_COPY);

    /** The metric counting file regions registered this way. */
    final Metric metric;

    FilePath(Metric metric) {
      this.metric = metric;
    }
  }

  private final IbvPd pd;
  private final boolean iwarp;
  private final String deviceName;
  private final VerbsCounters counters;
  private final Set<VerbsRegistration> registrations = ConcurrentHashMap.newKeySet();
  private final Set<FilePath> notedPaths = ConcurrentHashMap.newKeySet();

  /** Set once the kernel refused to pin a read-only file mapping; it will refuse every one. */
  private volatile boolean readOnlyPinRefused;

  /** The node's registration budget, which the memlock limit must cover (named in errors). */
  private final long budget;

  VerbsRegistrar(IbvPd pd, boolean iwarp, String deviceName, VerbsCounters counters, long budget) {
    this.budget = budget;
    this.pd = pd;
    this.iwarp = iwarp;
    this.deviceName = deviceName;
    this.counters = counters;
  }

  /** Registers a buffer served to peers ({@code remoteReadable}) or one reads land in. */
  ProviderRegistration register(ByteBuffer buffer, long address, boolean remoteReadable) {
    int length = buffer.capacity();
    int access = accessFor(remoteReadable ? Use.SERVED : Use.DESTINATION, iwarp);
    try {
      return track(
          new VerbsRegistration(
              this, regMr(address, length, access), address, length, remoteReadable, null));
    } catch (IOException e) {
      throw registrationFailed(length, e);
    }
  }

  /**
   * Access flags for a registration. Served memory is never remotely writable. An iWARP RNIC places
   * RDMA Read responses into the sink with a remote write (iWARP's Read Response targets a tagged
   * buffer), so read destinations there need REMOTE_WRITE; InfiniBand and RoCE write them locally
   * and get LOCAL_WRITE only. File mappings get REMOTE_READ only: no write access, so registering
   * them never dirties a page.
   */
  static int accessFor(Use use, boolean iwarp) {
    switch (use) {
      case DESTINATION:
        return IbvMr.IBV_ACCESS_LOCAL_WRITE | (iwarp ? IbvMr.IBV_ACCESS_REMOTE_WRITE : 0);
      case SERVED:
        return IbvMr.IBV_ACCESS_REMOTE_READ | IbvMr.IBV_ACCESS_LOCAL_WRITE;
      default:
        return IbvMr.IBV_ACCESS_REMOTE_READ;
    }
  }

  /**
   * Registers a file region by the first of three ways that works: the read-only mapping itself;
   * where the kernel cannot pin a read-only shared mapping (Linux before 6.2 pins with
   * FOLL_FORCE|FOLL_WRITE and gets EFAULT), a read-write shared mapping of the same file range,
   * registered with REMOTE_READ only (nothing writes through it, no page is dirtied); and, when the
   * file cannot be opened for writing, a pinned private copy in direct memory (a memcpy of the
   * region and twice its memory). Each way is counted ({@link VerbsCounters#fileRegistered}).
   */
  ProviderRegistration registerFile(ByteBuffer mapping, long address, Path file, long fileOffset) {
    int length = mapping.capacity();
    int access = accessFor(Use.FILE, iwarp);
    IOException readOnlyFailure = null;
    if (!readOnlyPinRefused) {
      try {
        VerbsRegistration r =
            track(
                new VerbsRegistration(
                    this, regMr(address, length, access), address, length, true, null));
        fileRegistered(FilePath.READ_ONLY_MAPPING, file, length, null);
        return r;
      } catch (IOException e) {
        if (!isBadAddress(e)) {
          throw registrationFailed(length, e);
        }
        readOnlyFailure = e;
        readOnlyPinRefused = true;
        LOG.info(
            "this kernel ({}) cannot pin read-only file mappings for RDMA ({}): file "
                + "regions are registered through read-write shared mappings (REMOTE_READ only), "
                + "or served from private copies when a file is not writable",
            System.getProperty("os.version"),
            e.getMessage());
      }
    }
    String why;
    if (file == null) {
      why = "the file's path is unknown";
    } else {
      try {
        return registerSharedMapping(file, fileOffset, length, access);
      } catch (IOException e) {
        why = e.toString();
      }
    }
    return registerCopy(mapping, file, length, why, readOnlyFailure);
  }

  private ProviderRegistration registerSharedMapping(
      Path file, long fileOffset, int length, int access) throws IOException {
    MappedByteBuffer shared;
    FileTime modified = Files.getLastModifiedTime(file);
    // Opening for writing needs write permission; the mapping outlives the channel.
    try (FileChannel rw =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      shared = rw.map(FileChannel.MapMode.READ_WRITE, fileOffset, length);
    }
    long sharedAddress = MemoryAccess.address(shared);
    try {
      VerbsRegistration r =
          track(
              new VerbsRegistration(
                  this,
                  regMr(sharedAddress, length, access),
                  sharedAddress,
                  length,
                  true,
                  () -> MemoryAccess.free(shared)));
      restoreModified(file, modified);
      fileRegistered(FilePath.SHARED_MAPPING, file, length, null);
      return r;
    } catch (IOException | RuntimeException e) {
      MemoryAccess.free(shared);
      throw e instanceof IOException
          ? (IOException) e
          : new IOException("ibv_reg_mr of the read-write mapping failed: " + e, e);
    }
  }

  /**
   * Pinning takes write faults on the shared mapping (the same FOLL_WRITE that fails on the
   * read-only one), and the kernel stamps the file's mtime on a write fault although no byte
   * changes; set it back so tools that watch mtime see the file as it was. The ctime stays new.
   */
  private static void restoreModified(Path file, FileTime modified) {
    try {
      if (!Files.getLastModifiedTime(file).equals(modified)) {
        Files.setLastModifiedTime(file, modified);
      }
    } catch (IOException e) {
      LOG.debug("cannot restore the mtime of {}", file, e);
    }
  }

  private ProviderRegistration registerCopy(
      ByteBuffer mapping, Path file, int length, String why, IOException readOnlyFailure) {
    ByteBuffer copy = ByteBuffer.allocateDirect(length);
    copy.put(mapping.duplicate().clear()).clear();
    long copyAddress = MemoryAccess.address(copy);
    try {
      VerbsRegistration r =
          track(
              new VerbsRegistration(
                  this,
                  regMr(copyAddress, length, accessFor(Use.FILE, iwarp)),
                  copyAddress,
                  length,
                  true,
                  () -> MemoryAccess.free(copy)));
      fileRegistered(FilePath.PRIVATE_COPY, file, length, why);
      return r;
    } catch (IOException e) {
      MemoryAccess.free(copy);
      if (readOnlyFailure != null) {
        e.addSuppressed(readOnlyFailure);
      }
      throw registrationFailed(length, e);
    }
  }

  private void fileRegistered(FilePath how, Path file, int length, String why) {
    counters.fileRegistered(how, length);
    if (notedPaths.add(how)) {
      LOG.info(
          "file regions: first registered as {} ({} bytes of {}){}",
          how,
          length,
          file,
          why == null ? "" : "; no read-write mapping because " + why);
    } else {
      LOG.debug(
          "file region of {} bytes of {} registered as {}{}",
          length,
          file,
          how,
          why == null ? "" : " (" + why + ")");
    }
  }

  private static boolean isBadAddress(IOException e) {
    return String.valueOf(e.getMessage()).contains("Bad address");
  }

  private VerbsRegistration track(VerbsRegistration r) {
    registrations.add(r);
    return r;
  }

  private IbvMr regMr(long address, int length, int access) throws IOException {
    SVCRegMr call = pd.regMr(address, length, access);
    try {
      return call.execute().getMr();
    } finally {
      call.free();
    }
  }

  private RegistrationException registrationFailed(int length, IOException e) {
    return new RegistrationException(
        MemlockLimit.pinFailure(
            length,
            deviceName,
            String.valueOf(e.getMessage()),
            MemlockLimit.read(MemlockLimit.PROC_SELF_LIMITS),
            budget),
        e);
  }

  /** Called by a registration as it deregisters. */
  void registrationReleased(VerbsRegistration r) {
    registrations.remove(r);
  }

  /** Deregisters every registration still held (at close); returns how many there were. */
  int releaseAll() {
    int leftover = 0;
    for (VerbsRegistration r : registrations.toArray(new VerbsRegistration[0])) {
      r.forceRelease();
      leftover++;
    }
    return leftover;
  }

  int registrations() {
    return registrations.size();
  }

  /**
   * Bytes the NIC holds registered for this node now (private copies included): the provider's
   * view, reported as {@code verbsRegisteredBytes}; the node's books are its allocator tree.
   */
  long registeredBytes() {
    long n = 0;
    for (VerbsRegistration r : registrations) {
      n += r.length();
    }
    return n;
  }
}
