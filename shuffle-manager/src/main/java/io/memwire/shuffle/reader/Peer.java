package io.memwire.shuffle.reader;

/** The executor a fetch request reads from, as Spark names it. */
record Peer(String host, int port, String execId) {
  @Override
  public String toString() {
    return execId + "@" + host + ":" + port;
  }
}
