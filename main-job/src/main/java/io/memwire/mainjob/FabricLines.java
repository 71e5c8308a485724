package io.memwire.mainjob;

import io.memwire.transfer.fabric.FabricWindow;
import java.util.List;

/**
 * The NICs' counters over the main job's run, printed before the ratios ({@link FabricWindow}). The
 * launcher has block-transfer only when Memwire's jar is on its class path ({@code bin/memwire
 * main-job} and the pom's {@code exec} put it there); otherwise one line says they were not read.
 */
final class FabricLines {
  private final FabricWindow window;
  private final String why;

  private FabricLines(FabricWindow window, String why) {
    this.window = window;
    this.why = why;
  }

  static FabricLines open() {
    try {
      return new FabricLines(FabricWindow.open(), null);
    } catch (NoClassDefFoundError e) {
      return new FabricLines(null, "Memwire's jar is not on the launcher's class path");
    }
  }

  void print() {
    List<String> lines =
        window == null ? List.of("fabric: NIC counters not read: " + why) : window.lines();
    lines.forEach(l -> MainJob.say("%s", l));
  }
}
