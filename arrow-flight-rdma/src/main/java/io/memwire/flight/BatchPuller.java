package io.memwire.flight;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.memwire.flight.memory.ArenaMemory;
import io.memwire.flight.wire.ServerMessage;
import io.memwire.flight.wire.WireException;
import io.memwire.transfer.Connection;
import io.memwire.transfer.Connector;
import io.memwire.transfer.ReadBatch;
import io.memwire.transfer.ReadRequest;
import io.memwire.transfer.RemoteAccessException;
import io.memwire.transfer.RemoteRegion;
import io.memwire.transfer.TransferBuffer;
import io.memwire.transfer.TransferException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.apache.arrow.flatbuf.Message;
import org.apache.arrow.flatbuf.MessageHeader;
import org.apache.arrow.flatbuf.RecordBatch;
import org.apache.arrow.flight.CallStatus;
import org.apache.arrow.flight.FlightStream;
import org.apache.arrow.memory.ArrowBuf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pump of one RDMA exchange on the client. {@link #run()} runs on a thread of the client's
 * executor: it reads the server's descriptors, starts each batch's reads at once (the server's
 * credit window bounds how many are ahead) and hands the consumer one {@link StreamEvent} per
 * message; it is the only producer of those events. A batch's reads end on a transport thread,
 * which checks the lease guard, completes the batch's {@link Pull#done} and queues its FREE.
 *
 * <p>Each batch is one ordered read ({@link Connection#read(List, ReadRequest)}): every buffer at
 * its IPC offset in one registered block, then the lease's 8-byte guard word, which the transport
 * reads only after every body read has fetched its bytes. The server zeroes the word before it ends
 * a lease, so finding the lease's generation proves that the bytes are this batch's.
 */
final class BatchPuller implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(BatchPuller.class);

  private final RdmaFlightClient client;
  private final Connector node;
  private final ArenaMemory memory;
  private final FlightStream reader;
  private final FreeSender frees;
  private final BlockingQueue<StreamEvent> events;
  private final Duration readTimeout;

  /** Batches whose reads have not ended; its monitor also signals their end. */
  @GuardedBy("pending")
  private final List<Pull> pending = new ArrayList<>();

  BatchPuller(
      RdmaFlightClient client,
      Connector node,
      ArenaMemory memory,
      FlightStream reader,
      FreeSender frees,
      BlockingQueue<StreamEvent> events) {
    this.client = client;
    this.node = node;
    this.memory = memory;
    this.reader = reader;
    this.frees = frees;
    this.events = events;
    this.readTimeout = client.readTimeout();
  }

  @Override
  public void run() {
    boolean endSeen = false;
    try {
      while (reader.next()) {
        ArrowBuf md = reader.getLatestMetadata();
        if (md == null) {
          throw new WireException(
              "the server sent a record batch instead of an RDMA descriptor; "
                  + "it does not speak the memwire data plane");
        }
        byte[] bytes = new byte[(int) md.readableBytes()];
        md.getBytes(0, bytes);
        ServerMessage m = ServerMessage.decode(ByteBuffer.wrap(bytes));
        switch (m.kind()) {
          case ServerMessage.BATCH:
            events.add(new StreamEvent.Batch(startPull(m)));
            break;
          case ServerMessage.METADATA:
            events.add(new StreamEvent.Metadata(m.appMetadata()));
            break;
          default: // END: every pull must be done and freed before we half-close
            endSeen = true;
            awaitPending();
            frees.halfClose();
            break;
        }
      }
      if (!endSeen) {
        throw new WireException("the server ended the exchange without its END message");
      }
      events.add(new StreamEvent.End());
    } catch (Throwable t) {
      events.add(new StreamEvent.Failed(t));
    }
  }

  private Pull startPull(ServerMessage m) throws TransferException, InterruptedException {
    Message msg = Message.getRootAsMessage(ByteBuffer.wrap(m.header()));
    if (msg.headerType() != MessageHeader.RecordBatch) {
      throw new WireException(
          "batch "
              + m.sequence()
              + " carries IPC header type "
              + msg.headerType()
              + ", not a record batch");
    }
    RecordBatch header = (RecordBatch) msg.header(new RecordBatch());
    Pull p = new Pull(m.sequence(), header, m.bodyLength(), m.appMetadata());
    if (m.bodyLength() == 0) {
      nothingToRead(p);
      return p;
    }
    try {
      p.setBlock(memory.allocate(m.bodyLength(), readTimeout));
    } catch (RuntimeException e) {
      throw FallbackReason.CLIENT_MEMORY.error(
          CallStatus.RESOURCE_EXHAUSTED,
          "no landing memory " + "for a body of " + m.bodyLength() + " bytes: " + e.getMessage(),
          e);
    }
    List<ReadRequest> reads;
    ReadRequest guardRead;
    Connection c;
    try {
      RemoteRegion[] regions = new RemoteRegion[m.regions().size()];
      for (int i = 0; i < regions.length; i++) {
        regions[i] = RemoteRegion.of(m.regions().get(i));
      }
      reads = bodyReads(m, regions, p);
      if (reads.isEmpty()) {
        nothingToRead(p);
        return p;
      }
      InetSocketAddress peer = reads.get(0).region().node();
      ServerMessage.Guard guard = m.guard();
      if (guard == null) {
        throw new WireException(
            "batch " + m.sequence() + " has buffers to read but no lease guard");
      }
      if (!peer.equals(regions[guard.regionIndex].node())) {
        throw new WireException("batch " + m.sequence() + " has its lease guard on another node");
      }
      guardRead = ReadRequest.of(regions[guard.regionIndex], 0, LeaseGuards.SLOT_BYTES);
      RdmaFlightClient.BeforeReads hook = client.beforeReads;
      if (hook != null) {
        hook.run(m);
      }
      c = node.connection(peer);
    } catch (TransferException | InterruptedException | RuntimeException e) {
      p.freeBlock();
      throw e;
    }
    long generation = m.guard().generation;
    synchronized (pending) {
      pending.add(p);
    }
    ReadBatch rb;
    try {
      rb = c.read(reads, guardRead);
    } catch (RuntimeException e) {
      synchronized (pending) {
        pending.remove(p);
        pending.notifyAll();
      }
      p.freeBlock();
      throw e;
    }
    // all() completes once every read has ended, so no read still lands in the block when a
    // failure frees it.
    var unused =
        rb.all()
            .whenComplete(
                (v, err) -> {
                  List<CompletableFuture<TransferBuffer>> results = rb.results();
                  for (CompletableFuture<TransferBuffer> f :
                      results.subList(0, results.size() - 1)) {
                    if (!f.isCompletedExceptionally()) {
                      f.join().release();
                    }
                  }
                  CompletableFuture<TransferBuffer> guardResult = results.get(results.size() - 1);
                  if (err != null) {
                    if (!guardResult.isCompletedExceptionally()) {
                      guardResult.join().release();
                    }
                    readFailed(p, err instanceof CompletionException ? err.getCause() : err);
                  } else {
                    checkGuard(p, guardResult.join(), generation, m);
                  }
                });
    return p;
  }

  /** One read per non-empty buffer, landing at its IPC offset in the pull's block. */
  private static List<ReadRequest> bodyReads(ServerMessage m, RemoteRegion[] regions, Pull p)
      throws WireException {
    ArenaMemory.Block block = p.block();
    List<ReadRequest> reads = new ArrayList<>(m.buffers().size());
    InetSocketAddress peer = null;
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
      reads.add(
          ReadRequest.of(rr, r.regionOffset, Math.toIntExact(r.length))
              .into(block.region(), block.regionOffset() + r.bodyOffset));
    }
    return reads;
  }

  /** A batch without body bytes: done at once, its FREE sent without waiting for a group. */
  private void nothingToRead(Pull p) {
    p.done.complete(null);
    frees.queue(p.seq);
    frees.sendSoon();
  }

  /**
   * Ends a pull whose reads failed. Every lease has regions of its own that the server closes when
   * the lease ends, so a read refused for a closed (or already forgotten) region means the server
   * ended the lease: treated like a revoked guard, the server's own status follows. Verbs reports a
   * deregistered MR only as a remote access error, so that counts too.
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
    client.clientStats().staleBatchesRejected.increment();
    LOG.warn("batch {}: the server ended its lease while it was being read; dropped it", p.seq);
    ended(
        p,
        FallbackReason.LEASE_ENDED.error(
            CallStatus.UNAVAILABLE,
            "the lease of batch "
                + p.seq
                + " ended on the server (lease timeout or cancellation) before its reads were "
                + "verified; its bytes were dropped as they may belong to another batch",
            null));
  }

  /**
   * Ends a pull whose body reads all completed: kept when the guard word still holds the lease's
   * generation, dropped (another batch may own the memory now) when it does not.
   */
  private void checkGuard(Pull p, TransferBuffer buf, long generation, ServerMessage m) {
    long found;
    try {
      found = buf.nioBuffer().order(ByteOrder.BIG_ENDIAN).getLong(0);
    } finally {
      buf.release();
    }
    if (found != generation) {
      leaseEnded(p);
    } else {
      Throwable bad;
      try {
        bad = checkBody(p, m);
      } catch (RuntimeException e) {
        bad = e; // the pull must end either way, or the stream would wait for it
      }
      ended(p, bad);
    }
  }

  /**
   * Checks the landed body against the CRC32C its descriptor carries (when it carries one): null
   * when it matches, else the error that fails the stream; the body is then never handed out.
   */
  private Throwable checkBody(Pull p, ServerMessage m) {
    long expected = m.bodyChecksum();
    if (expected == ServerMessage.NO_CHECKSUM) {
      return null;
    }
    ArenaMemory.Block block = p.block();
    List<ByteBuffer> views = new ArrayList<>(m.buffers().size());
    for (ServerMessage.BufferRef r : m.buffers()) {
      if (r.length > 0) {
        views.add(block.slice(r.bodyOffset, r.length));
      }
    }
    long found = LeaseBodies.checksum(views);
    if (found == expected) {
      client.clientStats().bodiesVerified.increment();
      return null;
    }
    client.clientStats().bodiesMismatched.increment();
    String what =
        String.format(
            "body of batch %d (%d bytes) failed its checksum: expected CRC32C %08x, found %08x;"
                + " the batch was dropped",
            p.seq, p.bodyLength, expected, found);
    LOG.error("{}", what);
    // Not a data-plane fallback: the server sent bytes that changed before the client read them.
    return CallStatus.INTERNAL.withDescription("memwire: " + what).toRuntimeException();
  }

  /**
   * A pull's reads and guard check ended: queue its FREE, complete it, let END go on.
   *
   * <p>FREEs are sent in groups: each FREE message costs a gRPC message and a chain of thread
   * wake-ups on both sides, which at 1 MiB batches cost as much as the reads. A group goes out when
   * it holds a quarter of the batches the window admits (by count and by bytes: 8 of 1 MiB with the
   * defaults, 1 of 16 MiB), or as soon as the FREEs held back are at least as many as the reads
   * still running, so the server gets credit before the reads run dry; the last read to end always
   * sends, so nothing is held back for good.
   */
  private void ended(Pull p, Throwable err) {
    int held = frees.queue(p.seq);
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
    long fit = Math.min(client.windowBatches(), client.windowBytes() / Math.max(1, p.bodyLength));
    if (err != null || held >= Math.max(1, fit / 4) || stillReading <= held) {
      frees.sendSoon();
    }
  }

  private void awaitPending() throws InterruptedException {
    long deadline = System.nanoTime() + readTimeout.toNanos();
    synchronized (pending) {
      while (!pending.isEmpty()) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw FallbackReason.TIMEOUT.error(
              CallStatus.TIMED_OUT,
              "reads of "
                  + pending.size()
                  + " batches did not end within "
                  + readTimeout.toMillis()
                  + " ms",
              null);
        }
        pending.wait(Math.max(1, left / 1_000_000));
      }
    }
  }
}
