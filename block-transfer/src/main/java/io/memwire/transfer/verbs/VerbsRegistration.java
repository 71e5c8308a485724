package io.memwire.transfer.verbs;

import com.ibm.disni.verbs.IbvMr;
import com.ibm.disni.verbs.SVCDeregMr;
import io.memwire.transfer.spi.ProviderRegistration;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One memory region registered with the NIC. Served regions are remotely readable, never remotely
 * writable (the descriptor publishes the rkey); read destinations carry local-write access (plus
 * remote write on iWARP, see {@link VerbsRegistrar#accessFor}) and publish no rkey.
 */
final class VerbsRegistration implements ProviderRegistration {
  private static final Logger LOG = LoggerFactory.getLogger(VerbsRegistration.class);

  private final VerbsRegistrar registrar;
  private final IbvMr mr;
  private final long address;
  private final int length;
  private final boolean remote;
  private final Runnable afterRelease;
  private final AtomicBoolean deregistered = new AtomicBoolean();

  /** {@code afterRelease} frees provider-owned memory (a private copy), or is null. */
  VerbsRegistration(
      VerbsRegistrar registrar,
      IbvMr mr,
      long address,
      int length,
      boolean remote,
      Runnable afterRelease) {
    this.afterRelease = afterRelease;
    this.registrar = registrar;
    this.mr = mr;
    this.address = address;
    this.length = length;
    this.remote = remote;
  }

  @Override
  public long remoteKey() {
    return remote ? Integer.toUnsignedLong(mr.getRkey()) : 0;
  }

  @Override
  public long localKey() {
    return Integer.toUnsignedLong(mr.getLkey());
  }

  @Override
  public long address() {
    return address;
  }

  @Override
  public int length() {
    return length;
  }

  /**
   * Deregisters at once: once {@code ibv_dereg_mr} returns the NIC neither serves nor writes this
   * memory, so {@code onQuiesced} runs right after it.
   */
  @Override
  public void deregister(Runnable onQuiesced) {
    if (!deregistered.compareAndSet(false, true)) {
      return;
    }
    if (release()) {
      onQuiesced.run();
    }
  }

  /** Deregisters the MR; false (memory must stay) when the NIC refused. */
  boolean release() {
    registrar.registrationReleased(this);
    try {
      SVCDeregMr call = mr.deregMr();
      try {
        call.execute();
      } finally {
        call.free();
      }
      if (afterRelease != null) {
        afterRelease.run();
      }
      return true;
    } catch (IOException | RuntimeException e) {
      LOG.error(
          "ibv_dereg_mr of {} bytes at 0x{} failed; the memory is left allocated",
          length,
          Long.toHexString(address),
          e);
      return false;
    }
  }

  boolean isDeregistered() {
    return deregistered.get();
  }

  /** Called by the registrar at close for a registration the node did not release. */
  void forceRelease() {
    if (deregistered.compareAndSet(false, true)) {
      release();
    }
  }
}
