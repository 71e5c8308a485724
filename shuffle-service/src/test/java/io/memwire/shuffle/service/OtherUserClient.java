package io.memwire.shuffle.service;

import io.memwire.shuffle.protocol.ServiceProtocol;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Base64;

/**
 * What the second local user runs against the service (started through {@link OtherUser}), speaking
 * the protocol directly as any local process could. One line of output per step: {@code OK ...} or
 * {@code ERR <code> <message>}.
 *
 * <ul>
 *   <li>{@code register SOCKET APP EXEC TOKEN_SEED DRIVER_PORT}: registers, prints the answer.
 *   <li>{@code publish SOCKET APP TOKEN_SEED DRIVER_PORT SHUFFLE MAP_INDEX MAP_ID INDEX DATA}:
 *       registers, publishes one output, prints the pointer.
 *   <li>{@code remove SOCKET APP TOKEN_SEED DRIVER_PORT SHUFFLE}: registers, removes a shuffle.
 *   <li>{@code attack SOCKET APP DRIVER_PORT INDEX DATA MAP_ID COUNT}: registers, then publishes
 *       the same paths {@code COUNT} times (map index = attempt), printing each answer.
 * </ul>
 */
public final class OtherUserClient {
  private OtherUserClient() {}

  public static void main(String[] a) throws IOException {
    Path socket = Path.of(a[1]);
    switch (a[0]) {
      case "register":
        try (ServiceFixture.Raw raw = new ServiceFixture.Raw(socket)) {
          System.out.println(
              answer(
                  raw.call(
                      new ServiceProtocol.Out(ServiceProtocol.REGISTER)
                          .u16(ServiceProtocol.VERSION)
                          .str(a[2])
                          .str(a[3])
                          .bytes(ServiceFixture.token(Integer.parseInt(a[4])))
                          .str("127.0.0.1")
                          .u16(Integer.parseInt(a[5])))));
        }
        break;
      case "publish":
        try (ServiceFixture.Raw raw = new ServiceFixture.Raw(socket)) {
          if (register(raw, a[2], a[3], a[4])) {
            System.out.println(
                answer(
                    raw.publish(
                        Integer.parseInt(a[5]),
                        Integer.parseInt(a[6]),
                        Long.parseLong(a[7]),
                        a[8],
                        a[9])));
          }
        }
        break;
      case "remove":
        try (ServiceFixture.Raw raw = new ServiceFixture.Raw(socket)) {
          if (register(raw, a[2], a[3], a[4])) {
            System.out.println(
                answer(
                    raw.call(
                        new ServiceProtocol.Out(ServiceProtocol.REMOVE_SHUFFLE)
                            .i32(Integer.parseInt(a[5])))));
          }
        }
        break;
      case "attack":
        try (ServiceFixture.Raw raw = new ServiceFixture.Raw(socket)) {
          if (register(raw, a[2], "66", a[3])) {
            int count = Integer.parseInt(a[7]);
            for (int i = 0; i < count; i++) {
              System.out.println(
                  i + " " + answer(raw.publish(1, i, Long.parseLong(a[6]), a[4], a[5])));
            }
          }
        }
        break;
      default:
        throw new IllegalArgumentException(a[0]);
    }
  }

  /** Registers executor "9"; prints the refusal and returns false when refused. */
  private static boolean register(ServiceFixture.Raw raw, String app, String seed, String port)
      throws IOException {
    String r =
        answer(
            raw.call(
                new ServiceProtocol.Out(ServiceProtocol.REGISTER)
                    .u16(ServiceProtocol.VERSION)
                    .str(app)
                    .str("9")
                    .bytes(ServiceFixture.token(Integer.parseInt(seed)))
                    .str("127.0.0.1")
                    .u16(Integer.parseInt(port))));
    if (!r.startsWith("OK")) {
      System.out.println("register " + r);
      return false;
    }
    return true;
  }

  private static String answer(ServiceProtocol.In r) throws IOException {
    if (r == null) {
      return "ERR 0 closed";
    }
    if (r.type() == ServiceProtocol.ERROR) {
      return "ERR " + r.u8() + " " + r.str().replace('\n', ' ');
    }
    java.nio.ByteBuffer rest = r.rest();
    byte[] body = new byte[rest.remaining()];
    rest.get(body);
    return "OK " + Base64.getEncoder().encodeToString(body);
  }
}
