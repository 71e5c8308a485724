package io.memwire.shuffle.service;

import io.memwire.shuffle.directory.DirectoryPointer;
import io.memwire.shuffle.directory.DirectorySlot;
import io.memwire.shuffle.directory.OutputChecksums;
import io.memwire.shuffle.directory.ShuffleDirectory;
import io.memwire.shuffle.protocol.ServiceProtocol;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.Registrar;
import io.memwire.transfer.RegistrationException;
import io.memwire.transfer.memory.LimitExceededException;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

/**
 * How the service takes over a map output from an executor. Called by client threads, any number at
 * once; what it touches is thread-safe (quotas, the application's held outputs, the registrar).
 */
final class OutputIntake {
  private final Registrar node;
  private final ByteQuotas bytes;
  private final Quotas quotas;
  private final ServiceCounters counters;
  private final AtomicLong linkIds;
  private final BooleanSupplier closed;
  private final RecoveryLog log;
  private final PointerResolver resolver;

  OutputIntake(
      Registrar node,
      ByteQuotas bytes,
      Quotas quotas,
      ServiceCounters counters,
      AtomicLong linkIds,
      BooleanSupplier closed,
      RecoveryLog log,
      PointerResolver resolver) {
    this.log = log;
    this.resolver = resolver;
    this.node = node;
    this.bytes = bytes;
    this.quotas = quotas;
    this.counters = counters;
    this.linkIds = linkIds;
    this.closed = closed;
  }

  /**
   * Takes a finished map output of {@code app}'s {@code executor}: links the files the executor
   * names into the service's directory after checking them ({@link OutputFiles}), charges the
   * quotas, registers the links on the application's node of the byte quotas ({@link ByteQuotas})
   * and publishes them in the executor's directory, replacing an earlier attempt of the same map
   * index. All or nothing: a refusal leaves no link, region or quota behind.
   *
   * @throws Refused with the protocol's code when the output is not taken
   */
  DirectoryPointer publish(
      Application app,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      Path index,
      Path data,
      Path checksums)
      throws Refused {
    if (closed.getAsBoolean()) {
      counters.refused("stopping");
      throw new Refused(ServiceProtocol.E_CLOSED, "the shuffle service is stopping");
    }
    Application.Held before = app.held(executor, shuffleId, mapIndex);
    if (before != null && before.mapId() == mapId) {
      return before.pointer(); // the same task attempt again: nothing new to take
    }
    UserPrincipal user = app.key.user();
    OutputFiles.Linked linked;
    try {
      linked =
          OutputFiles.take(
              shuffleId,
              mapId,
              index,
              data,
              app.dir.resolve(executor),
              user,
              linkIds.incrementAndGet());
    } catch (OutputFiles.OutputRefused e) {
      counters.outputsRefused.increment();
      counters.refused("badOutput");
      throw new Refused(ServiceProtocol.E_BAD_OUTPUT, e.getMessage());
    }
    String overQuota = quotas.takeOutput(user, app.key, app.key.id());
    if (overQuota != null) {
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      counters.outputsRefused.increment();
      throw new Refused(ServiceProtocol.E_QUOTA, overQuota);
    }
    OutputChecksums sums =
        OutputFiles.checksums(
            checksums,
            shuffleId,
            mapId,
            linked.indexLength(),
            app.dir.resolve(executor),
            user,
            linkIds.incrementAndGet());
    try {
      DirectoryPointer p = install(app, executor, shuffleId, mapIndex, mapId, linked, sums);
      log.outputTaken(
          app.record(),
          record(app, executor, shuffleId, mapIndex, mapId, linked, p.checksums() ? sums : null)
              .withPointerKey(keyOf(p)));
      counters.outputsTaken.increment();
      if (sums != null && p.checksums()) {
        counters.outputsWithChecksums.increment();
      }
      return p;
    } catch (Refused e) {
      counters.outputsRefused.increment();
      if (e.code != ServiceProtocol.E_QUOTA) { // a quota refusal is counted by its limit
        counters.refused(
            e.code == ServiceProtocol.E_NO_CAPACITY
                ? "registrationBudget"
                : e.code == ServiceProtocol.E_CLOSED ? "stopping" : "badOutput");
      }
      throw e;
    }
  }

  /**
   * Takes back an output a previous run held, whose files {@link Recovery} has checked again: the
   * quotas charged, the files registered (new keys) and published in the executor's directory. On a
   * refusal nothing of it is left (its files deleted).
   *
   * @param recorded what the store recorded of it: once taken back, it is recorded again with the
   *     new directory chunk's key, and its old keys resolve to the new chunk ({@link
   *     PointerResolver})
   * @return why it was not taken back (a reason of {@link ServiceCounters#RECOVERY_DROPS}), or null
   */
  String adopt(Application app, RecoveryRecords.OutputRecord recorded, OutputFiles.Linked linked) {
    String overQuota = quotas.takeOutput(app.key.user(), app.key, app.key.id());
    if (overQuota != null) {
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      return "quota";
    }
    DirectoryPointer p;
    try {
      p =
          install(
              app,
              recorded.executor(),
              recorded.shuffleId(),
              recorded.mapIndex(),
              recorded.mapId(),
              linked,
              recorded.checksums());
    } catch (Refused e) {
      return e.code == ServiceProtocol.E_NO_CAPACITY
          ? "registrationBudget"
          : e.code == ServiceProtocol.E_QUOTA ? "quota" : "changed";
    }
    resolver.moved(recorded.pointerKeys(), app, recorded.executor(), recorded.shuffleId(), p);
    log.outputTaken(app.record(), recorded.withPointerKey(keyOf(p)));
    return null;
  }

  /** What the recovery store keeps of a held output. */
  static RecoveryRecords.OutputRecord record(
      Application app,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      OutputFiles.Linked linked,
      OutputChecksums checksums) {
    return new RecoveryRecords.OutputRecord(
        app.key.user().getName(),
        app.key.id(),
        executor,
        shuffleId,
        mapIndex,
        mapId,
        linked.index().getFileName().toString(),
        linked.data() == null ? "" : linked.data().getFileName().toString(),
        linked.indexLength(),
        linked.dataLength(),
        linked.indexCheck(),
        linked.dataCheck(),
        new long[0],
        checksums);
  }

  /** The region key naming a directory chunk (its first segment's). */
  static long keyOf(DirectoryPointer p) {
    return p.region().segments().get(0).key();
  }

  /**
   * Registers linked files whose quota is charged and publishes them in the executor's directory,
   * replacing what the slot held. On a refusal the files are deleted and the quota returned.
   */
  private DirectoryPointer install(
      Application app,
      String executor,
      int shuffleId,
      int mapIndex,
      long mapId,
      OutputFiles.Linked linked,
      OutputChecksums checksums)
      throws Refused {
    UserPrincipal user = app.key.user();
    MemoryRegion indexRegion = null;
    MemoryRegion dataRegion = null;
    String purpose = "";
    try {
      indexRegion = node.register(linked.index(), 0, linked.indexLength(), app.memory);
      if (linked.dataLength() > 0) {
        dataRegion = node.register(linked.data(), 0, linked.dataLength(), app.memory);
      }
      if (!DirectorySlot.fits(
          indexRegion.remote(), dataRegion == null ? null : dataRegion.remote())) {
        throw new RegistrationException(
            "data file of "
                + linked.dataLength()
                + " bytes needs more segments than a directory slot holds; raise "
                + ServiceSettings.TRANSFER_PREFIX
                + "maxSegmentSize");
      }
      ShuffleDirectory dir = app.directory(executor, node);
      purpose = " for a new shuffle directory chunk";
      MemoryRegion i = indexRegion;
      MemoryRegion d = dataRegion;
      indexRegion = null; // the directory owns them from here, even when publish throws
      dataRegion = null;
      DirectoryPointer p = dir.publish(shuffleId, mapIndex, mapId, i, d, checksums);
      Application.Held replaced =
          app.put(executor, shuffleId, mapIndex, new Application.Held(mapId, linked, p));
      if (replaced != null) {
        // The directory closed its regions when the slot moved on; its files and quota go now.
        Application.deleteFiles(List.of(replaced));
        quotas.returnOutput(user, app.key);
        counters.outputsReplaced.increment();
      }
      return p;
    } catch (IOException | RuntimeException e) {
      if (dataRegion != null) {
        dataRegion.close();
      }
      if (indexRegion != null) {
        indexRegion.close();
      }
      // Not recorded in the application (refused, or it ended meanwhile and its directory closed
      // the regions): the files and the quota go here.
      OutputFiles.deleteQuietly(linked.index());
      OutputFiles.deleteQuietly(linked.data());
      quotas.returnOutput(user, app.key);
      String overBytes = byteQuotaRefusal(app, e, purpose);
      if (overBytes != null) {
        throw new Refused(ServiceProtocol.E_QUOTA, overBytes);
      }
      int code =
          e instanceof RegistrationException
              ? ServiceProtocol.E_NO_CAPACITY
              : e instanceof IllegalStateException
                  ? ServiceProtocol.E_CLOSED
                  : ServiceProtocol.E_BAD_OUTPUT;
      throw new Refused(code, "cannot register map output " + mapId + ": " + e.getMessage());
    }
  }

  /**
   * Why a registration was refused when a byte quota refused it (counted and logged by {@link
   * Quotas}), else null (the registration budget, or another failure).
   */
  private String byteQuotaRefusal(Application app, Exception e, String purpose) {
    if (!(e instanceof RegistrationException)
        || !(e.getCause() instanceof LimitExceededException limit)) {
      return null;
    }
    String key = bytes.quotaKey(limit);
    if (key == null) {
      return null;
    }
    boolean perUser = key.equals("maxBytesPerUser");
    String holder = perUser ? "user " + app.key.user().getName() : "application " + app.key.id();
    String why =
        holder
            + " holds "
            + limit.reserved()
            + " bytes"
            + (perUser ? "" : " (" + app.directoryBytes() + " of them shuffle directories)")
            + "; "
            + limit.requested()
            + " more"
            + purpose
            + " would pass its quota of "
            + limit.limit()
            + " ("
            + key
            + ")";
    return quotas.refusedBytes(holder, key, why);
  }
}
