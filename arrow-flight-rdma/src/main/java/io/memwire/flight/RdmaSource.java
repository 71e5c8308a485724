package io.memwire.flight;

import io.memwire.flight.memory.RegisteredMemory;
import io.memwire.flight.wire.ClientMessage;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.Connection;
import io.memwire.transfer.ProviderKind;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferException;
import io.memwire.transfer.TransferNode;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.compression.CommonsCompressionFactory;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightClient;
import org.apache.arrow.flight.FlightRuntimeException;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.ForeignAllocation;
import org.apache.arrow.vector.VectorLoader;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.dictionary.DictionaryProvider;
import org.apache.arrow.vector.ipc.message.ArrowRecordBatch;
import org.apache.arrow.vector.ipc.message.MessageSerializer;
import org.apache.arrow.vector.types.pojo.Schema;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client end of one RDMA exchange. A pump thread reads the server's descriptors and starts
 * each batch's batched read at once (the server's credit window bounds how many are ahead), lands
 * every buffer at its IPC offset in one registered body and sends FREE as soon as the bytes are
 * here. {@link #next()} wraps that body as an Arrow buffer of the caller's allocator (no copy),
 * rebuilds the batch from its IPC header and loads it.
 */
final class RdmaSource implements StreamSource {
  private static final Logger LOG = LoggerFactory.getLogger(RdmaSource.class);
  private static final Object END = new Object();

  /** A batch whose body is being read or has arrived. */
  private static final class Pull {
    final long seq;
    final RecordBatch header;
    final long bodyLength;
    final byte[] appMetadata;
    final CompletableFuture<Void> done = new CompletableFuture<>();
    RegisteredMemory.Block block;

    Pull(long seq, RecordBatch header, long bodyLength, byte[] appMetadata) {
      this.seq = seq;
      this.header = header;
      this.bodyLength = bodyLength;
      this.appMetadata = appMetadata;
    }

    synchronized RegisteredMemory.Block takeBlock() {
      RegisteredMemory.Block b = block;
      block = null;
      return b;
    }

    void freeBlock() {
      RegisteredMemory.Block b = takeBlock();
      if (b != null) {
        b.release();
      }
    }
  }

  private static final class Meta {
    final byte[] bytes;

    Meta(byte[] bytes) {
      this.bytes = bytes;
    }
  }

  private static final class Failure {
    final Throwable cause;

    Failure(Throwable cause) {
      this.cause = cause;
    }
  }

  private final RdmaFlightClient client;
  private final TransferNode node;
  private final RegisteredMemory memory;
  private final BufferAllocator allocator;
  private final FlightClient.ExchangeReaderWriter exchange;
  private final FlightStream reader;
  private final Duration readTimeout;
  private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
  private final ConcurrentLinkedQueue<Long> frees = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean flushScheduled = new AtomicBoolean();
  /** FREEs queued and not yet sent. */
  private final AtomicInteger unflushedFrees = new AtomicInteger();
  private final int windowBatches;
  private final long windowBytes;
  private final List<Pull> pending = new ArrayList<>();
  private final Object writerLock = new Object();
  private final Future<?> pumpTask;
  private boolean writerDone;
  private Object head;
  private Object sticky; // END or a Failure once reached
  private VectorSchemaRoot root;
  private VectorLoader loader;
  private ArrowBuf latestMetadata;
  private volatile boolean closed;
  private long batches;

  RdmaSource(RdmaFlightClient client, TransferNode node, RegisteredMemory memory,
      FlightClient.ExchangeReaderWriter exchange) {
    this.client = client;
    this.node = node;
    this.memory = memory;
    this.allocator = client.allocator();
    this.exchange = exchange;
    this.reader = exchange.getReader();
    this.readTimeout = client.readTimeout();
    this.windowBatches = client.windowBatches();
    this.windowBytes = client.windowBytes();
    this.pumpTask = client.executor().submit(this::pump);
  }

  // ---- pump thread -----------------------------------------------------------------------

  private void pump() {
    boolean endSeen = false;
    try {
      while (reader.next()) {
        ArrowBuf md = reader.getLatestMetadata();
        if (md == null) {
          throw new WireException("the server sent a record batch instead of an RDMA descriptor; "
              + "it does not speak the memwire data plane");
        }
        byte[] bytes = new byte[(int) md.readableBytes()];
        md.getBytes(0, bytes);
        ServerMessage m = ServerMessage.decode(ByteBuffer.wrap(bytes));
        switch (m.kind()) {
          case ServerMessage.BATCH:
            queue.add(startPull(m));
            break;
          case ServerMessage.METADATA:
            queue.add(new Meta(m.appMetadata()));
            break;
          default: // END: every pull must be done and freed before we half-close
            endSeen = true;
            awaitPending();
            flushFrees();
            synchronized (writerLock) {
              if (!writerDone) {
                writerDone = true;
                exchange.getWriter().completed();
              }
            }
            break;
        }
      }
      if (!endSeen) {
        throw new WireException("the server ended the exchange without its END message");
      }
      queue.add(END);
    } catch (Throwable t) {
      queue.add(new Failure(t));
    }
  }

  private Pull startPull(ServerMessage m) throws TransferException, InterruptedException {
    Message msg = Message.getRootAsMessage(ByteBuffer.wrap(m.header()));
    if (msg.headerType() != MessageHeader.RecordBatch) {
      throw new WireException("batch " + m.sequence() + " carries IPC header type "
          + msg.headerType() + ", not a record batch");
    }
    RecordBatch header = (RecordBatch) msg.header(new RecordBatch());
    Pull p = new Pull(m.sequence(), header, m.bodyLength(), m.appMetadata());
    if (m.bodyLength() == 0) {
      p.done.complete(null);
      enqueueFree(p.seq);
      return p;
    }
    p.block = memory.allocate(m.bodyLength(), readTimeout);
    List<ReadRequest> reads = new ArrayList<>(m.buffers().size());
    InetSocketAddress peer = null;
    RemoteRegion[] regions = new RemoteRegion[m.regions().size()];
    try {
      for (int i = 0; i < regions.length; i++) {
        regions[i] = RemoteRegion.of(m.regions().get(i));
      }
      for (ServerMessage.BufferRef r : m.buffers()) {
        if (r.length == 0) {
          continue;
        }
        RemoteRegion rr = regions[r.regionIndex];
        if (peer == null) {
          peer = rr.node();
        } else if (!peer.equals(rr.node())) {
          throw new WireException("batch " + m.sequence() + " spans two transfer nodes");
        }
        reads.add(ReadRequest.of(rr, r.regionOffset, Math.toIntExact(r.length))
            .into(p.block.region(), p.block.regionOffset() + r.bodyOffset));
      }
    } catch (RuntimeException e) {
      p.freeBlock();
      throw e;
    }
    if (reads.isEmpty()) {
      p.done.complete(null);
      enqueueFree(p.seq);
      return p;
    }
    ServerMessage.Guard guard = m.guard();
    Connection c;
    try {
      if (guard == null) {
        throw new WireException("batch " + m.sequence() + " has buffers to read but no lease guard");
      }
      if (!peer.equals(regions[guard.regionIndex].node())) {
        throw new WireException("batch " + m.sequence() + " has its lease guard on another node");
      }
      RdmaFlightClient.BeforeReads hook = client.beforeReads;
      if (hook != null) {
        hook.run(m);
      }
      c = node.connection(peer);
    } catch (TransferException | InterruptedException | RuntimeException e) {
      p.freeBlock();
      throw e;
    }
    ReadRequest guardRead = ReadRequest.of(regions[guard.regionIndex], guard.regionOffset,
        LeaseGuards.SLOT_BYTES);
    // The tcp responder serves one connection's reads in order and copies each response's bytes
    // into the socket in that order, so a guard read posted after the body reads leaves the
    // server after every body byte: one round trip per batch, not two. Verbs does not promise
    // to fetch the responses of a chain in order, so there the guard is read only afterwards.
    boolean guardInBatch = node.provider() == ProviderKind.TCP;
    if (guardInBatch) {
      reads.add(guardRead);
    }
    ReadBatch rb = c.read(reads);
    synchronized (pending) {
      pending.add(p);
    }
    // allOf: runs once every read has ended, so no read still lands in the block when it is freed.
    rb.all().whenComplete((v, err) -> {
      List<CompletableFuture<TransferBuffer>> results = rb.results();
      int bodies = guardInBatch ? results.size() - 1 : results.size();
      for (int i = 0; i < bodies; i++) {
        CompletableFuture<TransferBuffer> f = results.get(i);
        if (!f.isCompletedExceptionally()) {
          f.join().release();
        }
      }
      if (err != null) {
        if (guardInBatch && !results.get(bodies).isCompletedExceptionally()) {
          results.get(bodies).join().release();
        }
        readFailed(p, err instanceof CompletionException ? err.getCause() : err);
        return;
      }
      if (guardInBatch) {
        checkGuard(p, results.get(bodies).join(), guard.generation);
        return;
      }
      // The guard is read only now that every body read has completed, i.e. the NIC has fetched
      // every body byte. If the word still holds this lease's generation, the lease was alive
      // after the last body byte was read; the server revokes the word before it frees a body,
      // so none of these bytes can belong to a batch that reused the memory.
      CompletableFuture<TransferBuffer> gf;
      try {
        gf = c.read(guardRead);
      } catch (RuntimeException e) {
        ended(p, e);
        return;
      }
      gf.whenComplete((buf, gerr) -> {
        if (gerr != null) {
          readFailed(p, gerr instanceof CompletionException ? gerr.getCause() : gerr);
        } else {
          checkGuard(p, buf, guard.generation);
        }
      });
    });
    return p;
  }

  /**
   * Ends a pull whose reads failed. Every lease has regions of its own that the server closes
   * when the lease ends, so a read refused for a closed (or already forgotten) region means the
   * server ended the lease: treated like a revoked guard, the server's own status follows. Verbs
   * reports a deregistered MR only as a remote access error, so that counts too.
   */
  private void readFailed(Pull p, Throwable err) {
    for (Throwable c = err; c != null; c = c.getCause()) {
      if (c instanceof RemoteAccessException) {
        RemoteAccessException.Reason r = ((RemoteAccessException) c).reason();
        if (r == RemoteAccessException.Reason.REGION_CLOSED
            || r == RemoteAccessException.Reason.UNKNOWN_KEY
            || r == RemoteAccessException.Reason.ACCESS_ERROR) {
          leaseEnded(p);
          return;
        }
      }
    }
    ended(p, err);
  }

  private void leaseEnded(Pull p) {
    client.staleBatchesRejected.increment();
    LOG.warn("batch {}: the server ended its lease while it was being read; dropped it", p.seq);
    ended(p, CallStatus.UNAVAILABLE.withDescription("memwire: the lease of batch " + p.seq
        + " ended on the server (lease timeout or cancellation) before its reads were "
        + "verified; its bytes were dropped as they may belong to another batch")
        .withCause(new LeaseEnded()).toRuntimeException());
  }

  /**
   * Ends a pull whose body reads all completed: kept when the guard word still holds the lease's
   * generation, dropped (another batch may own the memory now) when it does not.
   */
  private void checkGuard(Pull p, TransferBuffer buf, long generation) {
    long found;
    try {
      found = buf.nioBuffer().order(java.nio.ByteOrder.BIG_ENDIAN).getLong(0);
    } finally {
      buf.release();
    }
    if (found != generation) {
      leaseEnded(p);
    } else {
      ended(p, null);
    }
  }

  /**
   * A pull's reads and guard check ended: queue its FREE, complete it, let END go on.
   *
   * <p>FREEs are sent in groups: each FREE message costs a gRPC message and a chain of thread
   * wake-ups on both sides, which at 1 MiB batches cost as much as the reads. A group goes out
   * when it holds a quarter of the batches the window admits (by count and by bytes: 8 of 1 MiB
   * with the defaults, 1 of 16 MiB), or as soon as the FREEs held back are at least
   * as many as the reads still running, so the server gets credit before the reads run dry; the
   * last read to end always sends, so nothing is held back for good.
   */
  private void ended(Pull p, Throwable err) {
    int held = queueFree(p.seq);
    if (err != null) {
      p.freeBlock();
      p.done.completeExceptionally(err);
    } else {
      p.done.complete(null);
    }
    int stillReading;
    synchronized (pending) {
      pending.remove(p);
      stillReading = pending.size();
      pending.notifyAll();
    }
    // The window holds as many of these batches as both its limits allow; a group is a quarter.
    long fit = Math.min(windowBatches, windowBytes / Math.max(1, p.bodyLength));
    if (err != null || held >= Math.max(1, fit / 4) || stillReading <= held) {
      scheduleFlush();
    }
  }

  private void awaitPending() throws InterruptedException {
    long deadline = System.nanoTime() + readTimeout.toNanos();
    synchronized (pending) {
      while (!pending.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw CallStatus.TIMED_OUT.withDescription("memwire: reads of " + pending.size()
              + " batches did not end within " + readTimeout.toMillis() + " ms")
              .toRuntimeException();
        }
        pending.wait(Math.max(1, left / 1_000_000));
      }
    }
  }

  /** Queues a FREE and sends it without waiting for a group. */
  private void enqueueFree(long seq) {
    queueFree(seq);
    scheduleFlush();
  }

  /** Queues a FREE for the next flush; returns how many are now waiting to be sent. */
  private int queueFree(long seq) {
    frees.add(seq);
    return unflushedFrees.incrementAndGet();
  }

  private void scheduleFlush() {
    if (flushScheduled.compareAndSet(false, true)) {
      try {
        client.executor().execute(this::flushFrees);
      } catch (RuntimeException e) {
        flushScheduled.set(false); // client closing: the server releases leases when the call ends
      }
    }
  }

  /** Sends every queued FREE in one message (under the writer lock, so none is overtaken). */
  private void flushFrees() {
    synchronized (writerLock) {
      flushScheduled.set(false);
      long[] seqs = new long[16];
      int n = 0;
      for (Long s = frees.poll(); s != null; s = frees.poll()) {
        if (n == seqs.length) {
          seqs = java.util.Arrays.copyOf(seqs, n * 2);
        }
        seqs[n++] = s;
      }
      unflushedFrees.addAndGet(-n);
      if (n == 0 || writerDone || closed) {
        return;
      }
      int size = ClientMessage.freeSize(n);
      ByteBuffer msg = ByteBuffer.allocate(size);
      ClientMessage.writeFree(msg, seqs, n);
      ArrowBuf buf = allocator.buffer(size);
      buf.setBytes(0, msg.array());
      buf.writerIndex(size);
      try {
        exchange.getWriter().putMetadata(buf); // takes ownership
      } catch (RuntimeException e) {
        LOG.debug("sending FREE failed; the server releases leases when the exchange ends", e);
      }
    }
  }

  // ---- caller thread ---------------------------------------------------------------------

  private Object take() {
    if (head != null) {
      Object h = head;
      head = null;
      return h;
    }
    if (sticky != null) {
      return sticky;
    }
    try {
      while (true) {
        if (closed) {
          throw new IllegalStateException("stream is closed");
        }
        Object it = queue.poll(100, TimeUnit.MILLISECONDS);
        if (it != null) {
          return it;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED.withDescription("interrupted waiting for the next batch")
          .withCause(e).toRuntimeException();
    }
  }

  @Override
  public void settle() {
    if (head != null || sticky != null) {
      if (sticky instanceof Failure) {
        throw toFlight(((Failure) sticky).cause);
      }
      return;
    }
    Object it = take();
    if (it instanceof Pull) {
      try {
        await((Pull) it);
      } catch (FlightRuntimeException e) {
        discard(it);
        FlightRuntimeException why = whyLeaseEnded(e);
        sticky = new Failure(why);
        throw why;
      }
    }
    if (it instanceof Failure) {
      sticky = it;
      throw toFlight(((Failure) it).cause);
    }
    head = it;
  }

  @Override
  public boolean next() {
    Object it = take();
    if (it == END) {
      sticky = END;
      return false;
    }
    if (it instanceof Failure) {
      sticky = it;
      throw toFlight(((Failure) it).cause);
    }
    ensureRoot();
    if (it instanceof Meta) {
      setLatest(((Meta) it).bytes);
      root.clear();
      return true;
    }
    Pull p = (Pull) it;
    try {
      await(p);
      load(p);
    } catch (FlightRuntimeException e) {
      discard(p);
      FlightRuntimeException why = whyLeaseEnded(e);
      sticky = new Failure(why);
      throw why;
    }
    batches++;
    return true;
  }

  /**
   * A batch dropped by its guard check means the server ended the exchange (lease timeout,
   * producer error, cancellation): its own status is on its way and says more, so wait for it.
   */
  private FlightRuntimeException whyLeaseEnded(FlightRuntimeException e) {
    if (!(e.getCause() instanceof LeaseEnded)) {
      return e;
    }
    long deadline = System.nanoTime() + Math.min(readTimeout.toNanos(), 10_000_000_000L);
    try {
      while (System.nanoTime() < deadline) {
        Object it = queue.poll(50, TimeUnit.MILLISECONDS);
        if (it instanceof Failure) {
          FlightRuntimeException f = toFlight(((Failure) it).cause);
          f.addSuppressed(e);
          return f;
        }
        if (it == END) {
          return e;
        }
        discard(it); // later batches of an ended exchange are dropped too
      }
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
    }
    return e;
  }

  /** Marks a batch dropped because the server had ended its lease. */
  private static final class LeaseEnded extends RuntimeException {
    LeaseEnded() {
      super("lease guard revoked", null, false, false);
    }
  }

  private void await(Pull p) {
    try {
      p.done.get(readTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw toFlight(e.getCause());
    } catch (TimeoutException e) {
      throw CallStatus.TIMED_OUT.withDescription("memwire: reads of batch " + p.seq
          + " did not end within " + readTimeout.toMillis() + " ms").toRuntimeException();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw CallStatus.CANCELLED.withDescription("interrupted").withCause(e).toRuntimeException();
    }
  }

  private void load(Pull p) {
    ArrowBuf body;
    RegisteredMemory.Block block = p.takeBlock();
    if (block == null) {
      body = allocator.getEmpty();
    } else {
      try {
        body = allocator.wrapForeignAllocation(new BlockAllocation(block, p.bodyLength));
      } catch (RuntimeException e) {
        block.release();
        throw CallStatus.RESOURCE_EXHAUSTED.withDescription("memwire: cannot account a body of "
            + p.bodyLength + " bytes: " + e.getMessage()).withCause(e).toRuntimeException();
      }
    }
    ArrowRecordBatch batch;
    try {
      batch = MessageSerializer.deserializeRecordBatch(p.header, body); // takes over body
    } catch (IOException | RuntimeException e) {
      body.getReferenceManager().release();
      throw CallStatus.INTERNAL.withDescription("memwire: bad record batch header in batch "
          + p.seq + ": " + e.getMessage()).withCause(e).toRuntimeException();
    }
    try {
      root.clear();
      loader.load(batch);
    } finally {
      batch.close();
    }
    setLatest(p.appMetadata);
  }

  private void ensureRoot() {
    if (root == null) {
      root = VectorSchemaRoot.create(reader.getSchema(), allocator);
      loader = new VectorLoader(root, CommonsCompressionFactory.INSTANCE);
    }
  }

  private void setLatest(byte[] bytes) {
    if (latestMetadata != null) {
      latestMetadata.close();
      latestMetadata = null;
    }
    if (bytes != null) {
      latestMetadata = allocator.buffer(bytes.length);
      latestMetadata.setBytes(0, bytes);
      latestMetadata.writerIndex(bytes.length);
    }
  }

  @Override
  public Schema schema() {
    ensureRoot();
    return root.getSchema();
  }

  @Override
  public VectorSchemaRoot root() {
    ensureRoot();
    return root;
  }

  @Override
  public DictionaryProvider dictionaries() {
    return reader.getDictionaryProvider();
  }

  @Override
  public ArrowBuf latestMetadata() {
    return latestMetadata;
  }

  long batchesHandedOut() {
    return batches;
  }

  @Override
  public void cancel(String message, Throwable cause) {
    reader.cancel(message, cause);
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    if (sticky != END) {
      try {
        reader.cancel("memwire: stream closed before its end", null);
      } catch (RuntimeException e) {
        LOG.debug("cancel on close failed", e);
      }
    }
    try {
      pumpTask.get(10, TimeUnit.SECONDS);
    } catch (TimeoutException e) {
      pumpTask.cancel(true);
      LOG.warn("exchange reader did not stop within 10 s of close; interrupted it");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      LOG.debug("pump ended with", e.getCause());
    }
    List<Object> left = new ArrayList<>();
    if (head != null) {
      left.add(head);
      head = null;
    }
    queue.drainTo(left);
    for (Object it : left) {
      discard(it);
    }
    if (root != null) {
      root.close();
    }
    setLatest(null);
    try {
      exchange.close();
    } catch (Exception e) {
      LOG.debug("closing the exchange: {}", e.toString());
    }
  }

  /** Frees a pull's block once its reads have ended (never while bytes may still land in it). */
  private void discard(Object it) {
    if (!(it instanceof Pull)) {
      return;
    }
    Pull p = (Pull) it;
    try {
      p.done.get(readTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      // failed reads already freed the block
    } catch (TimeoutException e) {
      LOG.warn("reads of batch {} did not end in time; leaving its {} bytes unfreed", p.seq,
          p.bodyLength);
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return;
    }
    p.freeBlock();
  }

  /** Whether a failure means the data plane itself did not work (so DoGet may be tried). */
  static boolean isDataPlaneFailure(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof TransferException || c instanceof WireException) {
        return true;
      }
      if (c instanceof FlightRuntimeException) {
        FlightRuntimeException f = (FlightRuntimeException) c;
        String d = f.status().description();
        if (f.status().code() == org.apache.arrow.flight.FlightStatusCode.UNIMPLEMENTED
            || (d != null && d.startsWith("memwire:"))) {
          return true;
        }
      }
    }
    return false;
  }

  static FlightRuntimeException toFlight(Throwable t) {
    if (t instanceof FlightRuntimeException) {
      return (FlightRuntimeException) t;
    }
    if (t instanceof TransferException) {
      return CallStatus.UNAVAILABLE.withDescription("memwire: data-plane read failed: "
          + t.getMessage()).withCause(t).toRuntimeException();
    }
    if (t instanceof WireException) {
      return CallStatus.INTERNAL.withDescription("memwire: " + t.getMessage()).withCause(t)
          .toRuntimeException();
    }
    return CallStatus.INTERNAL.withDescription("memwire: " + t).withCause(t).toRuntimeException();
  }

  /** A registered block seen by Arrow as a foreign allocation: freed when Arrow releases it. */
  private static final class BlockAllocation extends ForeignAllocation {
    private final RegisteredMemory.Block block;

    BlockAllocation(RegisteredMemory.Block block, long size) {
      super(size, block.address());
      this.block = block;
    }

    @Override
    protected void release0() {
      block.release();
    }
  }
}
