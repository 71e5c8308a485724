package io.memwire.tools.doctor;

import java.util.Locale;

/** The outcome of one doctor check: a status, what was found and, unless OK, what to do. */
public final class Check {
  /** OK: fine. WARN: works, but not as well as it could, or verbs is skipped. FAIL: broken. */
  public enum Status {
    OK,
    WARN,
    FAIL
  }

  private final Status status;
  private final String name;
  private final String finding;
  private final String advice;

  Check(Status status, String name, String finding, String advice) {
    this.status = status;
    this.name = name;
    this.finding = finding;
    this.advice = advice;
  }

  static Check ok(String name, String finding) {
    return new Check(Status.OK, name, finding, "");
  }

  static Check warn(String name, String finding, String advice) {
    return new Check(Status.WARN, name, finding, advice);
  }

  static Check fail(String name, String finding, String advice) {
    return new Check(Status.FAIL, name, finding, advice);
  }

  public Status status() {
    return status;
  }

  public String name() {
    return name;
  }

  public String finding() {
    return finding;
  }

  public String advice() {
    return advice;
  }

  /** One line: {@code WARN libdisni not loadable (...) -> build libdisni ...}. */
  public String line() {
    return String.format(
        Locale.ROOT,
        "%-4s %-13s %s%s",
        status,
        name,
        finding,
        advice.isEmpty() ? "" : " -> " + advice);
  }

  @Override
  public String toString() {
    return line();
  }
}
