package io.memwire.flight;

import io.memwire.flight.memory.RegisteredMemory;
import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.ExchangeRequest;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.MemoryRegion;
import io.memwire.transfer.RegionDescriptor;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightProducer;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.flight.Ticket;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.VectorUnloader;
import org.apache.arrow.vector.compression.CompressionCodec;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowBuffer;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.IpcOption;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One RDMA data-plane exchange on the server. To the wrapped producer it is the stream listener
 * of a DoGet; to the client it sends one descriptor per batch and keeps each batch's body leased
 * (alive, in regions registered for that lease alone) until the client's FREE, the end of the
 * exchange, a cancellation or the lease timeout. The client's credit window bounds the leased
 * batches and bytes: {@code putNext} waits while the window is full.
 */
final class ServerSession implements FlightProducer.ServerStreamListener {
  private static final Logger LOG = LoggerFactory.getLogger(ServerSession.class);

  /**
   * A batch body the client may read until it is released. Only this lease's bytes are remotely
   * readable, through regions registered for it alone (own keys). However the lease ends (FREE,
   * cancel, client crash, end of exchange, timeout) its guard is revoked and its regions closed
   * before the body is released, so a read racing the end fails or is caught by the client's
   * guard check, and a read after it fails: the memory, once reused, is never read through them.
   */
  private final class Lease {
    final long seq;
    final long bytes;
    final long sentNanos = System.nanoTime();
    final LeaseGuards.Guard guard;
    final List<MemoryRegion> bodyRegions;
    final Runnable release;

    Lease(long seq, long bytes, LeaseGuards.Guard guard, List<MemoryRegion> bodyRegions,
        Runnable release) {
      this.seq = seq;
      this.bytes = bytes;
      this.guard = guard;
      this.bodyRegions = bodyRegions;
      this.release = release;
    }
  }

  /** A body ready to lease: its regions (this batch's bytes only) and how to release it. */
  private static final class Body {
    final List<MemoryRegion> regions;
    final Runnable release;

    Body(List<MemoryRegion> regions, Runnable release) {
      this.regions = regions;
      this.release = release;
    }
  }

  /**
   * Revokes the guard, closes the body's regions and, once the transport no longer touches them,
   * releases the body; the future completes after that release.
   */
  private CompletableFuture<Void> endBody(LeaseGuards.Guard guard, Body body) {
    if (guard != null) {
      owner.guards().revoke(guard);
    }
    CompletableFuture<?>[] released = new CompletableFuture<?>[body.regions.size()];
    for (int i = 0; i < released.length; i++) {
      MemoryRegion r = body.regions.get(i);
      r.close();
      released[i] = r.released();
    }
    return CompletableFuture.allOf(released).whenComplete((v, e) -> body.release.run());
  }

  /**
   * Ends a lease already taken out of {@link #leases}: it counts in the window (as ending) until
   * its body is released.
   */
  private void endLease(Lease l, boolean freedByClient) {
    synchronized (this) {
      endingLeases++;
      endingBytes += l.bytes;
    }
    endBody(l.guard, new Body(l.bodyRegions, l.release)).whenComplete((v, e) -> {
      if (e != null) {
        LOG.warn("releasing the body of lease {} failed", l.seq, e);
      }
      boolean ready;
      synchronized (this) {
        endingLeases--;
        endingBytes -= l.bytes;
        ready = hasCredit(0);
        notifyAll();
      }
      if (freedByClient) {
        owner.serverStats().leasesFreed.increment();
        Runnable r = onReady;
        if (ready && r != null) {
          r.run();
        }
      } else {
        owner.serverStats().leasesReleasedUnfreed.increment();
      }
    });
  }

  private final RdmaFlightProducer owner;
  private final FlightProducer.CallContext context;
  private final FlightStream reader;
  private final FlightProducer.ServerStreamListener writer;
  private final ExchangeRequest request;
  private final int windowBatches;
  private final long windowBytes;
  private final long leaseTimeoutNanos;

  private final Object writeLock = new Object();
  private final Map<Long, Lease> leases = new LinkedHashMap<>();
  private long leasedBytes;
  /** Leases freed by the client whose guard and body are being released right now. */
  private int endingLeases;
  private long endingBytes;
  private long peakLeasedBytes;
  private int peakLeasedBatches;
  private long nextSeq;
  private boolean producerDone;
  private Throwable producerError;
  private boolean clientDone;
  private volatile boolean cancelled;
  private volatile boolean ended;
  private volatile boolean zeroCopy;
  private volatile Runnable onCancel;
  private volatile Runnable onReady;
  private VectorUnloader unloader;
  private IpcOption option = IpcOption.DEFAULT;
  private Future<?> pump;

  ServerSession(RdmaFlightProducer owner, FlightProducer.CallContext context, FlightStream reader,
      FlightProducer.ServerStreamListener writer, ExchangeRequest request) {
    this.owner = owner;
    this.context = context;
    this.reader = reader;
    this.writer = writer;
    this.request = request;
    this.windowBatches = Math.min(request.windowBatches(), owner.maxWindowBatches());
    this.windowBytes = Math.min(request.windowBytes(), owner.maxWindowBytes());
    this.leaseTimeoutNanos = owner.leaseTimeout().toNanos();
  }

  /** Runs the exchange on the calling (DoExchange handler) thread until it ends. */
  void run() {
    writer.setOnCancelHandler(() -> {
      if (!ended) {
        cancel("client cancelled the exchange");
      }
    });
    pump = owner.executor().submit(this::pumpClientMessages);
    try {
      owner.delegate().getStream(context, new Ticket(request.ticket()), this);
    } catch (Throwable t) {
      error(t);
    }
    try {
      synchronized (this) {
        // An asynchronous producer finishes later: wait for completed(), error() or cancellation.
        while (!producerDone && !cancelled && !ended) {
          wait(100);
        }
        if (ended || cancelled) {
          return;
        }
      }
      if (producerError == null) {
        send(ServerMessage.end(nextSeq));
      }
      synchronized (this) {
        // Batches already described stay leased until the client has read them, also before a
        // producer error: ending the exchange revokes their guards and the client would drop
        // them. The lease timer bounds this wait: an overdue lease ends the session.
        while (!leases.isEmpty() && !clientDone && !cancelled && !ended) {
          wait(100);
        }
        if (ended || cancelled) {
          return;
        }
      }
      finish(producerError);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      finish(CallStatus.CANCELLED.withDescription("server shutting down").toRuntimeException());
    } catch (RuntimeException e) {
      finish(e);
    } finally {
      releaseAll();
    }
  }

  // ---- client messages -------------------------------------------------------------------

  private void pumpClientMessages() {
    try {
      while (reader.next()) {
        ArrowBuf md = reader.getLatestMetadata();
        if (md == null) {
          continue;
        }
        ByteBuffer bytes = md.nioBuffer(0, (int) md.readableBytes());
        long[] seqs = ClientMessage.readFree(bytes);
        owner.serverStats().freeMessages.increment();
        for (long s : seqs) {
          free(s);
        }
      }
      synchronized (this) {
        clientDone = true;
        notifyAll();
      }
    } catch (WireException e) {
      finish(CallStatus.INVALID_ARGUMENT.withDescription(e.getMessage()).toRuntimeException());
    } catch (RuntimeException e) {
      if (!ended) {
        cancel("client stream ended: " + e.getMessage());
      }
    }
  }

  private void free(long seq) {
    Lease l;
    synchronized (this) {
      l = leases.remove(seq);
      if (l == null) {
        return; // already released (end of exchange, timeout) or a duplicate FREE
      }
      leasedBytes -= l.bytes;
    }
    // The credit comes back only once the guard is revoked and the body released: the window
    // bounds what is pinned, and the producer's next block can reuse this one.
    endLease(l, true);
  }

  // ---- ServerStreamListener seen by the wrapped producer ----------------------------------

  @Override
  public boolean isCancelled() {
    return cancelled || ended || writer.isCancelled();
  }

  @Override
  public void setOnCancelHandler(Runnable handler) {
    this.onCancel = handler;
  }

  @Override
  public boolean isReady() {
    synchronized (this) {
      if (!hasCredit(0)) {
        return false;
      }
    }
    return writer.isReady();
  }

  @Override
  public void setOnReadyHandler(Runnable handler) {
    this.onReady = handler;
    writer.setOnReadyHandler(handler);
  }

  @Override
  public void setUseZeroCopy(boolean enabled) {
    this.zeroCopy = enabled;
  }

  @Override
  public void start(VectorSchemaRoot root, DictionaryProvider dictionaries, IpcOption option) {
    synchronized (writeLock) {
      writer.start(root, dictionaries, option);
    }
    this.option = option;
    this.unloader = new VectorUnloader(root, true, owner.codec(), true);
  }

  @Override
  public void putNext() {
    putNext(null);
  }

  @Override
  public void putNext(ArrowBuf metadata) {
    try {
      if (unloader == null) {
        throw CallStatus.INTERNAL.withDescription("Stream was not started, call start()")
            .toRuntimeException();
      }
      if (isCancelled()) {
        return;
      }
      byte[] appMetadata = bytesOf(metadata);
      try (ArrowRecordBatch batch = unloader.getRecordBatch()) {
        lease(batch, appMetadata);
      }
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  private void lease(ArrowRecordBatch batch, byte[] appMetadata) {
    ByteBuffer fb = MessageSerializer.serializeMetadata(batch, option);
    byte[] header = new byte[fb.remaining()];
    fb.get(header);
    long bodyLength = batch.computeBodyLength();
    List<ArrowBuf> bufs = batch.getBuffers();
    List<ArrowBuffer> layout = batch.getBuffersLayout();
    if (!awaitCredit(bodyLength)) {
      return;
    }
    List<RegionDescriptor> regions = new ArrayList<>();
    Map<MemoryRegion, Integer> regionIndex = new IdentityHashMap<>();
    List<ServerMessage.BufferRef> refs = new ArrayList<>(bufs.size());
    Body body;
    if (bodyLength == 0) {
      for (int i = 0; i < bufs.size(); i++) {
        refs.add(ServerMessage.BufferRef.empty(layout.get(i).getOffset()));
      }
      body = new Body(List.of(), () -> {});
    } else {
      body = zeroCopy ? leaseInPlace(bufs, layout, refs) : null;
      if (body == null) {
        refs.clear();
        body = leaseCopy(bufs, layout, bodyLength, refs);
      }
    }
    LeaseGuards.Guard guard = null;
    ServerMessage.Guard guardRef = null;
    List<ServerMessage.BufferRef> indexed;
    try {
      if (bodyLength > 0) {
        guard = owner.guards().issue();
      }
      indexed = new ArrayList<>(refs.size());
      for (ServerMessage.BufferRef r : refs) {
        indexed.add(r.length == 0 ? r : new ServerMessage.BufferRef(
            regionIndex(body.regions.get(r.regionIndex), regions, regionIndex), r.regionOffset,
            r.bodyOffset, r.length));
      }
      if (guard != null) {
        guardRef = new ServerMessage.Guard(regionIndex(guard.region(), regions, regionIndex),
            guard.regionOffset(), guard.generation);
      }
    } catch (RuntimeException e) {
      endBody(guard, body);
      throw CallStatus.UNAVAILABLE.withDescription("memwire: server data plane cannot register "
          + "a lease: " + e.getMessage()).withCause(e).toRuntimeException();
    }
    refs = indexed;
    long seq;
    synchronized (this) {
      if (cancelled || ended) {
        endBody(guard, body);
        return;
      }
      seq = nextSeq++;
      leases.put(seq, new Lease(seq, bodyLength, guard, body.regions, body.release));
      leasedBytes += bodyLength;
      peakLeasedBytes = Math.max(peakLeasedBytes, leasedBytes);
      peakLeasedBatches = Math.max(peakLeasedBatches, leases.size());
      owner.serverStats().notePeak(leasedBytes);
    }
    owner.serverStats().bodyBytes.add(bodyLength);
    send(ServerMessage.batch(seq, (int) Math.min(Integer.MAX_VALUE, leaseTimeoutNanos / 1_000_000),
        header, bodyLength, regions, refs, appMetadata, guardRef));
  }

  /**
   * Leases a zero-copy producer's buffers where they are: each run of adjacent buffers is
   * registered as a region of its own, so the client reaches these bytes and nothing around
   * them. Null (nothing held) when a buffer is not in this producer's memory: then it is copied.
   * Refs name regions by their index in the returned body's list.
   */
  private Body leaseInPlace(List<ArrowBuf> bufs, List<ArrowBuffer> layout,
      List<ServerMessage.BufferRef> refs) {
    RegisteredMemory memory = owner.memory();
    Integer[] order = new Integer[bufs.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
      long n = bufs.get(i).readableBytes();
      if (n > 0 && memory.locate(bufs.get(i).memoryAddress(), n) == null) {
        return null;
      }
    }
    java.util.Arrays.sort(order, (x, y) -> Long.compare(bufs.get(x).memoryAddress(),
        bufs.get(y).memoryAddress()));
    // Runs of buffers whose bytes touch or overlap: {start, end} and the run of each buffer.
    List<long[]> runs = new ArrayList<>();
    int[] runOf = new int[bufs.size()];
    for (int i : order) {
      long n = bufs.get(i).readableBytes();
      if (n == 0) {
        runOf[i] = -1;
        continue;
      }
      long start = bufs.get(i).memoryAddress();
      long[] last = runs.isEmpty() ? null : runs.get(runs.size() - 1);
      if (last != null && start <= last[1]
          && memory.locate(last[0], Math.max(last[1], start + n) - last[0]) != null) {
        last[1] = Math.max(last[1], start + n);
      } else {
        runs.add(new long[] {start, start + n});
      }
      runOf[i] = runs.size() - 1;
    }
    List<MemoryRegion> regions = new ArrayList<>(runs.size());
    try {
      for (long[] r : runs) {
        regions.add(owner.node().register(memory.locate(r[0], r[1] - r[0]).slice(r[1] - r[0])));
      }
    } catch (RuntimeException e) {
      regions.forEach(MemoryRegion::close);
      throw CallStatus.UNAVAILABLE.withDescription("memwire: server data plane cannot register "
          + "a lease: " + e.getMessage()).withCause(e).toRuntimeException();
    }
    // The producer promised not to touch these buffers again: keep them alive until the regions
    // over them are released.
    List<ArrowBuf> held = new ArrayList<>(bufs.size());
    for (int i = 0; i < bufs.size(); i++) {
      ArrowBuf b = bufs.get(i);
      long n = b.readableBytes();
      if (n == 0) {
        refs.add(ServerMessage.BufferRef.empty(layout.get(i).getOffset()));
        continue;
      }
      b.getReferenceManager().retain();
      held.add(b);
      refs.add(new ServerMessage.BufferRef(runOf[i], b.memoryAddress() - runs.get(runOf[i])[0],
          layout.get(i).getOffset(), n));
    }
    owner.serverStats().batchesInPlace.increment();
    return new Body(regions, () -> held.forEach(b -> b.getReferenceManager().release()));
  }

  /**
   * Copies the batch into a block at its IPC layout and registers exactly its body bytes as a
   * region of its own. The gaps between buffers are zeroed: the block may have held another
   * batch, and the region must show this batch's bytes only.
   */
  private Body leaseCopy(List<ArrowBuf> bufs, List<ArrowBuffer> layout, long bodyLength,
      List<ServerMessage.BufferRef> refs) {
    RegisteredMemory.Block block;
    try {
      block = owner.memory().allocate(bodyLength, owner.leaseTimeout());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED.withDescription("interrupted waiting for registered memory")
          .toRuntimeException();
    } catch (RuntimeException e) {
      // The data plane, not the data, failed: "memwire:" lets an auto client retry over DoGet.
      throw CallStatus.UNAVAILABLE.withDescription("memwire: server data plane cannot lease a "
          + "body of " + bodyLength + " bytes: " + e.getMessage()).withCause(e)
          .toRuntimeException();
    }
    long written = 0;
    for (int i = 0; i < bufs.size(); i++) {
      ArrowBuf b = bufs.get(i);
      long n = b.readableBytes();
      long off = layout.get(i).getOffset();
      if (n > 0) {
        if (off > written) {
          MemoryUtil.setMemory(block.address() + written, off - written, (byte) 0);
        }
        MemoryUtil.copyMemory(b.memoryAddress(), block.address() + off, n);
        written = Math.max(written, off + n);
        refs.add(new ServerMessage.BufferRef(0, off, off, n));
      } else {
        refs.add(ServerMessage.BufferRef.empty(off));
      }
    }
    if (bodyLength > written) {
      MemoryUtil.setMemory(block.address() + written, bodyLength - written, (byte) 0);
    }
    MemoryRegion region;
    try {
      region = owner.node().register(block.slice(0, bodyLength));
    } catch (RuntimeException e) {
      block.release();
      throw CallStatus.UNAVAILABLE.withDescription("memwire: server data plane cannot register "
          + "a body of " + bodyLength + " bytes: " + e.getMessage()).withCause(e)
          .toRuntimeException();
    }
    owner.serverStats().batchesCopied.increment();
    return new Body(List.of(region), block::release);
  }

  private static int regionIndex(MemoryRegion region, List<RegionDescriptor> regions,
      Map<MemoryRegion, Integer> index) {
    Integer i = index.get(region);
    if (i == null) {
      if (region.descriptors().size() != 1) {
        throw new IllegalStateException("a lease region of " + region.length()
            + " bytes spans several segments (maxSegmentSize); bodies must fit one segment");
      }
      i = regions.size();
      regions.add(region.descriptors().get(0));
      index.put(region, i);
    }
    return i;
  }

  /** Waits until the window has room for {@code bytes}; false when the session ended meanwhile. */
  private boolean awaitCredit(long bytes) {
    long deadline = System.nanoTime() + leaseTimeoutNanos;
    synchronized (this) {
      boolean waited = false;
      while (!cancelled && !ended && !hasCredit(bytes)) {
        if (!waited) {
          owner.serverStats().creditWaits.increment();
          waited = true;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          break;
        }
        try {
          wait(Math.max(1, left / 1_000_000));
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
      if (cancelled || ended) {
        return false;
      }
      if (hasCredit(bytes)) {
        return true;
      }
    }
    expire("the client freed no lease within the lease timeout of "
        + leaseTimeoutNanos / 1_000_000 + " ms while its window was full");
    return false;
  }

  /** Credit for one more batch of {@code bytes}; an empty window always admits one batch. */
  private boolean hasCredit(long bytes) {
    int batches = leases.size() + endingLeases;
    return batches == 0
        || (batches < windowBatches && leasedBytes + endingBytes + bytes <= windowBytes);
  }

  @Override
  public void putMetadata(ArrowBuf metadata) {
    try {
      if (isCancelled()) {
        return;
      }
      long seq;
      synchronized (this) {
        seq = nextSeq;
      }
      send(ServerMessage.metadata(seq, bytesOf(metadata)));
    } finally {
      if (metadata != null) {
        metadata.close();
      }
    }
  }

  @Override
  public void error(Throwable ex) {
    synchronized (this) {
      if (producerError == null) {
        producerError = ex;
      }
      producerDone = true;
      notifyAll(); // run() ends the exchange with this error once the sent batches are read
    }
  }

  @Override
  public void completed() {
    synchronized (this) {
      producerDone = true;
      notifyAll();
      if (!zeroCopy) {
        return;
      }
      // Leased-in-place buffers belong to the producer's allocator: hold the producer here until
      // the client is done with them, so it does not close that allocator under a lease.
      long deadline = System.nanoTime() + leaseTimeoutNanos;
      while ((!leases.isEmpty() || endingLeases > 0) && !cancelled && !ended
          && System.nanoTime() < deadline) {
        try {
          wait(100);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  // ---- ending ----------------------------------------------------------------------------

  private void send(ServerMessage m) {
    ArrowBuf buf = owner.allocator().buffer(m.encodedSize());
    try {
      m.encode(buf.nioBuffer(0, m.encodedSize()));
      buf.writerIndex(m.encodedSize());
      synchronized (writeLock) {
        if (ended) {
          buf.close();
          return;
        }
        writer.putMetadata(buf); // Flight takes ownership of buf
      }
    } catch (RuntimeException e) {
      if (buf.getReferenceManager().getRefCount() > 0) {
        buf.close();
      }
      throw e;
    }
  }

  /** Called by the producer's lease timer. */
  void checkLeases(long nowNanos) {
    long oldest;
    synchronized (this) {
      Iterator<Lease> it = leases.values().iterator();
      if (!it.hasNext()) {
        return;
      }
      Lease l = it.next();
      oldest = l.seq;
      if (nowNanos - l.sentNanos <= leaseTimeoutNanos) {
        return;
      }
    }
    expire("lease " + oldest + " was not freed within the lease timeout of "
        + leaseTimeoutNanos / 1_000_000 + " ms");
  }

  private void expire(String why) {
    owner.serverStats().leasesExpired.increment();
    LOG.warn("RDMA Flight exchange with {}: {}; ending it", context.peerIdentity(), why);
    finish(CallStatus.TIMED_OUT.withDescription(why).toRuntimeException());
  }

  /** A cancellation or crash of the client: release everything, tell the producer. */
  void cancel(String why) {
    synchronized (this) {
      if (cancelled || ended) {
        return;
      }
      cancelled = true;
      notifyAll();
    }
    owner.serverStats().sessionsCancelled.increment();
    LOG.debug("RDMA Flight exchange cancelled: {}", why);
    releaseAll();
    Runnable h = onCancel;
    if (h != null) {
      h.run();
    }
    end();
  }

  /** Ends the exchange with success ({@code error == null}) or an error; runs once. */
  private void finish(Throwable error) {
    synchronized (writeLock) {
      if (ended) {
        return;
      }
      ended = true;
      try {
        if (error == null) {
          writer.completed();
        } else if (!cancelled) {
          writer.error(error);
        }
      } catch (RuntimeException e) {
        LOG.debug("ending the exchange failed", e);
      }
    }
    synchronized (this) {
      notifyAll();
    }
    releaseAll();
    end();
  }

  private void end() {
    ended = true;
    Future<?> p = pump;
    if (p != null && !clientDone) {
      p.cancel(true); // unblocks reader.next() if the client never half-closed
    }
    owner.sessionEnded(this);
  }

  private void releaseAll() {
    List<Lease> left;
    synchronized (this) {
      left = new ArrayList<>(leases.values());
      leases.clear();
      leasedBytes = 0;
      notifyAll();
    }
    for (Lease l : left) {
      endLease(l, false);
    }
  }

  synchronized int leasedBatches() {
    return leases.size();
  }

  synchronized long leasedBytes() {
    return leasedBytes;
  }

  synchronized long peakLeasedBytes() {
    return peakLeasedBytes;
  }

  synchronized int peakLeasedBatches() {
    return peakLeasedBatches;
  }

  long windowBytes() {
    return windowBytes;
  }

  int windowBatches() {
    return windowBatches;
  }

  private static byte[] bytesOf(ArrowBuf b) {
    if (b == null || b.readableBytes() == 0) {
      return null;
    }
    byte[] out = new byte[(int) b.readableBytes()];
    b.getBytes(b.readerIndex(), out);
    return out;
  }
}
