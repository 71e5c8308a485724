package io.memwire.tools.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The raw socket limit for the benchmark: plain blocking sockets, one thread per side, no Memwire
 * code. {@link #requestResponse} does the same job as a one-sided read (a 32-byte request, a
 * 16-byte header and the block from direct memory) with the same number of requests in flight;
 * {@link #stream} only streams blocks one way, the absolute ceiling.
 */
final class RawSocketBaseline implements AutoCloseable {
  private final ServerSocketChannel server;
  private final ByteBuffer memory;
  private final Thread acceptor;
  private final AtomicBoolean closed = new AtomicBoolean();

  RawSocketBaseline(String bind, ByteBuffer memory) throws IOException {
    this.memory = memory;
    this.server = ServerSocketChannel.open();
    server.bind(new InetSocketAddress(InetAddress.getByName(bind), 0));
    this.acceptor = new Thread(this::acceptLoop, "raw-baseline-acceptor");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  private void acceptLoop() {
    while (!closed.get()) {
      try {
        SocketChannel ch = server.accept();
        Thread t = new Thread(() -> serve(ch), "raw-baseline-server");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  /** Requests: u8 mode (1 = request/response, 2 = stream) | u32 size | u64 offset ... */
  private void serve(SocketChannel ch) {
    try (ch) {
      ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      ByteBuffer req = ByteBuffer.allocateDirect(32);
      ByteBuffer header = ByteBuffer.allocateDirect(16);
      while (true) {
        req.clear();
        while (req.hasRemaining()) {
          if (ch.read(req) < 0) {
            return;
          }
        }
        byte mode = req.get(0);
        int size = req.getInt(4);
        long offset = req.getLong(16);
        if (mode == 2) {
          // stream until the client closes
          ByteBuffer block = memory.duplicate();
          while (true) {
            block.clear().limit(size);
            while (block.hasRemaining()) {
              ch.write(block);
            }
          }
        }
        header.clear();
        header.putLong(0, size);
        ByteBuffer block = memory.duplicate();
        block.limit((int) offset + size).position((int) offset);
        ch.write(new ByteBuffer[] {header, block});
        while (block.hasRemaining()) {
          ch.write(block);
        }
      }
    } catch (IOException e) {
      // client went away: end of this measurement
    }
  }

  double requestResponse(int size, int depth, double seconds) throws Exception {
    try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
      ch.setOption(StandardSocketOptions.TCP_NODELAY, true);
      Semaphore slots = new Semaphore(depth);
      AtomicBoolean stop = new AtomicBoolean();
      long slotsInRegion = memory.capacity() / size;
      Thread writer =
          new Thread(
              () -> {
                ByteBuffer req = ByteBuffer.allocateDirect(32);
                long i = 0;
                try {
                  while (!stop.get()) {
                    if (!slots.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                      continue;
                    }
                    req.clear();
                    req.put(0, (byte) 1).putInt(4, size).putLong(16, (i++ % slotsInRegion) * size);
                    while (req.hasRemaining()) {
                      ch.write(req);
                    }
                  }
                } catch (IOException | InterruptedException e) {
                  // reader side ends the run
                }
              },
              "raw-baseline-writer");
      writer.setDaemon(true);
      long start = System.nanoTime();
      long end = start + (long) (seconds * 1e9);
      writer.start();
      ByteBuffer header = ByteBuffer.allocateDirect(16);
      ByteBuffer body = ByteBuffer.allocateDirect(size);
      long bytes = 0;
      while (System.nanoTime() < end) {
        readFully(ch, header.clear());
        readFully(ch, body.clear());
        bytes += size;
        slots.release();
      }
      stop.set(true);
      double elapsed = (System.nanoTime() - start) / 1e9;
      writer.join(5000);
      return bytes / elapsed / 1e6;
    }
  }

  double stream(int size, double seconds) throws Exception {
    try (SocketChannel ch = SocketChannel.open(server.getLocalAddress())) {
      ByteBuffer req = ByteBuffer.allocateDirect(32);
      req.put(0, (byte) 2).putInt(4, size);
      while (req.hasRemaining()) {
        ch.write(req);
      }
      ByteBuffer body = ByteBuffer.allocateDirect(size);
      long start = System.nanoTime();
      long end = start + (long) (seconds * 1e9);
      long bytes = 0;
      while (System.nanoTime() < end) {
        readFully(ch, body.clear());
        bytes += size;
      }
      return bytes / ((System.nanoTime() - start) / 1e9) / 1e6;
    }
  }

  private static void readFully(SocketChannel ch, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (ch.read(b) < 0) {
        throw new IOException("raw baseline server closed");
      }
    }
  }

  @Override
  public void close() throws IOException {
    closed.set(true);
    server.close();
  }
}
