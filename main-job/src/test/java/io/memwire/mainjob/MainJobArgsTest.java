package io.memwire.mainjob;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The launcher refuses bad options before it starts anything, naming the option. */
class MainJobArgsTest {
  @Test
  void aNegativeRotateIsRefused() {
    IllegalArgumentException e =
        assertThrows(
            IllegalArgumentException.class,
            () -> MainJob.run(new String[] {"--spark-home", "/nonexistent", "--rotate", "-1"}));
    assertEquals("--rotate must be 0 or more, got -1", e.getMessage());
  }

  @Test
  void anUnknownOptionIsRefused() {
    IllegalArgumentException e =
        assertThrows(IllegalArgumentException.class, () -> MainJob.run(new String[] {"--rotat"}));
    assertEquals("unknown argument --rotat", e.getMessage());
  }
}
