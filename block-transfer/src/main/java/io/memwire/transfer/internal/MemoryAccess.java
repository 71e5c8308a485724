package io.memwire.transfer.internal;

import java.lang.reflect.Field;
import java.nio.Buffer;
import java.nio.ByteBuffer;

/**
 * Internal to block-transfer, not API: other modules get direct memory through {@code
 * TransferNode.allocateRegistered} and {@code allocateDirect}, which free it themselves. The two
 * things about direct buffers the JDK 17 public API does not offer: a buffer's native address
 * (registration needs it) and freeing a mapping or direct buffer now rather than at GC. Both go
 * through {@code sun.misc.Unsafe} of the {@code jdk.unsupported} module, which needs no {@code
 * --add-opens} (the same route Arrow and Netty take).
 */
public final class MemoryAccess {
  private static final sun.misc.Unsafe UNSAFE;
  private static final long ADDRESS_OFFSET;

  static {
    try {
      Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      UNSAFE = (sun.misc.Unsafe) f.get(null);
      ADDRESS_OFFSET = UNSAFE.objectFieldOffset(Buffer.class.getDeclaredField("address"));
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private MemoryAccess() {}

  /** Native address of a direct buffer's element 0 (its position is not added). */
  public static long address(ByteBuffer direct) {
    if (!direct.isDirect()) {
      throw new IllegalArgumentException("not a direct buffer");
    }
    return UNSAFE.getLong(direct, ADDRESS_OFFSET);
  }

  /**
   * Frees a direct buffer or unmaps a mapping now. Only for buffers this project allocated or
   * mapped itself, never for a slice or duplicate, and only once nothing can touch it any more.
   */
  public static void free(ByteBuffer original) {
    UNSAFE.invokeCleaner(original);
  }
}
