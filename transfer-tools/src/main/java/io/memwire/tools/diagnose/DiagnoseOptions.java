package io.memwire.tools.diagnose;

import io.memwire.transfer.fabric.SysfsRoot;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of {@code memwire diagnose} ({@link Diagnose#USAGE}), parsed and checked. The
 * options after {@code --} go to the doctor; a {@code --sysfs} given here is passed on to it too.
 *
 * @param out the report file, or null for the default name
 * @param service the shuffle service's HTTP address, or null
 * @param log a log file to quote the last errors of, or null
 * @param interval seconds between the two NIC counter samples (0 to 600)
 * @param sysfs the sysfs root the counters are read from
 * @param doctorArgs the doctor's options
 */
record DiagnoseOptions(
    Path out, String service, Path log, double interval, Path sysfs, List<String> doctorArgs) {

  /** {@code --help} or {@code -h} was given. */
  static final class Help extends Exception {
    private static final long serialVersionUID = 1L;
  }

  /**
   * @throws Help when help is asked for
   * @throws IllegalArgumentException with the message to print (exit code 2) on a bad argument
   */
  static DiagnoseOptions parse(String[] args) throws Help {
    Path out = null;
    String service = null;
    Path log = null;
    double interval = 2;
    Path sysfs = SysfsRoot.SYSTEM.path();
    List<String> doctorArgs = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--")) {
        doctorArgs.addAll(List.of(args).subList(i + 1, args.length));
        break;
      }
      if (a.equals("--help") || a.equals("-h")) {
        throw new Help();
      }
      if (i + 1 >= args.length) {
        throw new IllegalArgumentException(a + " needs a value; " + Diagnose.USAGE);
      }
      String v = args[++i];
      switch (a) {
        case "--out" -> out = Path.of(v);
        case "--service" -> service = v;
        case "--log" -> log = Path.of(v);
        case "--interval" -> interval = number(v);
        case "--sysfs" -> sysfs = Path.of(v);
        default ->
            throw new IllegalArgumentException("unknown option " + a + "; " + Diagnose.USAGE);
      }
    }
    if (interval < 0 || interval > 600) {
      throw new IllegalArgumentException(
          "bad argument: --interval must be 0 to 600 seconds, got " + interval);
    }
    if (!sysfs.equals(SysfsRoot.SYSTEM.path()) && !doctorArgs.contains("--sysfs")) {
      doctorArgs.add("--sysfs");
      doctorArgs.add(sysfs.toString());
    }
    return new DiagnoseOptions(out, service, log, interval, sysfs, List.copyOf(doctorArgs));
  }

  private static double number(String v) {
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("bad argument: " + e.getMessage(), e);
    }
  }
}
