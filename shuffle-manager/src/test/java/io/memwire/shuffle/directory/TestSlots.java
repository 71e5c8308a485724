package io.memwire.shuffle.directory;

import java.nio.ByteBuffer;

/** Test access to the slot encoding, for tests that serve a directory chunk themselves. */
public final class TestSlots {
  private TestSlots() {}

  /**
   * Writes {@code slot} into the {@value DirectorySlot#SIZE} bytes of {@code chunk} at {@code at}.
   */
  public static void write(DirectorySlot slot, ByteBuffer chunk, int at) {
    slot.writeTo(chunk.duplicate().position(at).limit(at + DirectorySlot.SIZE).slice());
  }
}
