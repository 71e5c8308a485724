package io.memwire.shuffle.directory;

import java.nio.ByteBuffer;

/** Test access to the slot encoding, for tests that serve a directory chunk themselves. */
public final class TestSlots {
  private TestSlots() {}

  /**
   * Writes {@code slot} into {@code chunk} at {@code at}: its {@value DirectorySlot#SIZE}-byte
   * header and its inline entries and checksums, if it has any.
   */
  public static void write(DirectorySlot slot, ByteBuffer chunk, int at) {
    int length =
        ChunkLayout.readLength(
            slot.entries() == null ? 0 : slot.entries().length, slot.checksums() != null);
    slot.writeTo(chunk.duplicate().position(at).limit(at + length).slice());
  }
}
