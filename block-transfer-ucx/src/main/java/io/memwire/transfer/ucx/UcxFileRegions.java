package io.memwire.transfer.ucx;

import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.internal.MemoryAccess;
import io.memwire.transfer.spi.ProviderRegistration;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the ucx provider registers a file region: as the read-only mapping the node made, where UCX
 * can register one; else through a read-write shared mapping of the same range (UCX's verbs
 * transports register every region writable, and the kernel will not pin a read-only shared mapping
 * for writing), or a private copy where the file is not writable. Over RDMA the read-only mapping
 * is never tried: JUCX 1.15 answers a registration UCX refuses by querying the null memory handle,
 * which kills the JVM instead of throwing. Any thread; the choice is a volatile flag.
 */
final class UcxFileRegions {
  // The provider's logger name, so these lines read as they did before the split.
  private static final Logger LOG = LoggerFactory.getLogger(UcxProvider.class);

  private final UcxRegistrar registrar;

  /**
   * Whether file regions are registered as the read-only mappings given: false where UCX offers
   * RDMA, and from the first refusal on.
   */
  private volatile boolean readOnlyMappings;

  UcxFileRegions(UcxRegistrar registrar, boolean rdma) {
    this.registrar = registrar;
    this.readOnlyMappings = !rdma;
  }

  /**
   * Registers {@code [fileOffset, fileOffset + capacity)} of {@code file}, mapped read-only at
   * {@code mapping} ({@code address}); {@code file} may be null (no shared mapping is then made).
   *
   * @throws RegistrationException when UCX refuses every way
   */
  ProviderRegistration register(ByteBuffer mapping, long address, Path file, long fileOffset) {
    RegistrationException readOnlyFailure = null;
    if (readOnlyMappings) {
      try {
        return registrar.register(mapping, address, true);
      } catch (RegistrationException e) {
        readOnlyFailure = e;
        readOnlyMappings = false;
        LOG.info(
            "ucx: UCX cannot register read-only file mappings here ({}): file regions are"
                + " registered through read-write shared mappings, or served from private copies"
                + " when a file is not writable",
            e.getMessage());
      }
    }
    int length = mapping.capacity();
    String why = "the file's path is unknown";
    if (file != null) {
      try {
        return registerSharedMapping(file, fileOffset, length);
      } catch (IOException | RegistrationException e) {
        why = e.toString();
      }
    }
    LOG.debug("ucx: file region of {} bytes registered as a private copy: {}", length, why);
    ByteBuffer copy = ByteBuffer.allocateDirect(length);
    copy.put(mapping.duplicate().clear()).clear();
    try {
      return registrar.register(copy, MemoryAccess.address(copy), true, () -> free(copy));
    } catch (RegistrationException e) {
      free(copy);
      if (readOnlyFailure != null) {
        e.addSuppressed(readOnlyFailure);
      }
      throw e;
    }
  }

  private ProviderRegistration registerSharedMapping(Path file, long fileOffset, int length)
      throws IOException {
    FileTime modified = Files.getLastModifiedTime(file);
    MappedByteBuffer shared;
    try (FileChannel rw =
        FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
      shared = rw.map(FileChannel.MapMode.READ_WRITE, fileOffset, length);
    }
    try {
      ProviderRegistration r =
          registrar.register(shared, MemoryAccess.address(shared), true, () -> free(shared));
      // Pinning takes write faults, which stamp the file's mtime though no byte changes.
      if (!Files.getLastModifiedTime(file).equals(modified)) {
        Files.setLastModifiedTime(file, modified);
      }
      return r;
    } catch (RegistrationException e) {
      free(shared);
      throw e;
    }
  }

  private static void free(ByteBuffer b) {
    MemoryAccess.free(b);
  }
}
