package io.memwire.transfer;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.util.List;

/**
 * Holds an {@code after} read back until every body piece has left the queue (posted, so the
 * transport has it in order, or failed); then queues it.
 */
final class ReadGate {
  private final ReadQueue queue;
  private final List<ReadPiece> after;

  @GuardedBy("this")
  private int waiting;

  ReadGate(ReadQueue queue, List<ReadPiece> after) {
    this.queue = queue;
    this.after = after;
  }

  void track(List<ReadPiece> body) {
    synchronized (this) {
      waiting = body.size();
    }
    for (ReadPiece p : body) {
      p.gate = this;
    }
  }

  void pieceLeft() {
    boolean open;
    synchronized (this) {
      open = --waiting == 0;
    }
    if (open) {
      queue.enqueue(after);
    }
  }
}
