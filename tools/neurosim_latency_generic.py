"""Generic bandwidth models against NeuroSim V1.4 @9e6742c release-test latencies (docs/cost.md
"NeuroSim", the TOPS row): bytes through a buffer / its bandwidth, with NeuroSim's own
bandwidths and calibrated on conv1 (then conv2 is the slowest layer, 7.9x conv1).
Run: python3 tools/neurosim_latency_generic.py"""
import math
clk=2.2312
net=[(32,32,3,3,3,128,0,1),(32,32,128,3,3,128,1,1),(16,16,128,3,3,256,0,1),(16,16,256,3,3,256,1,1),
     (8,8,256,3,3,512,0,1),(8,8,512,3,3,512,1,1),(1,1,8192,1,1,1024,0,1),(1,1,1024,1,1,10,0,1)]
NM=[0,1,1,1,1,1,0,0]
adc=[8032.31,8032.31,6997.04,6997.04,2570.34,5140.68,142.797,17.8496]
acc=[1316.96,3325.04,546.643,1066.51,120.485,160.646,15.6184,2.5101]
oth=[184876,79595.2,29806.1,34502.7,9364.34,16707.2,833.352,569.104]
tot=[a+b+c for a,b,c in zip(adc,acc,oth)]
niv=[((H-K+1)//s)*((W-K+1)//s) for (H,W,C,K,_,Co,mp,s) in net]
# generic traffic per layer (bits): im2col input + 8-bit OFM ; and raw IFM + OFM
t_im=[C*K*K*8*n + Co*8*n for (H,W,C,K,_,Co,mp,s),n in zip(net,niv)]
t_raw=[H*W*C*8 + Co*8*n for (H,W,C,K,_,Co,mp,s),n in zip(net,niv)]
print("measured total:",[round(x) for x in tot])
for name,t in (("im2col",t_im),("raw",t_raw)):
    # (a) NeuroSim nominal global constants: buffer 9 cores x128b per cycle, bus 1089 b/cycle
    ga=[ (x/1152 + x/1089)*clk for x in t]
    k=oth[0]/(t[0])         # (b) calibrate one effective ns/bit so layer1 'other' = 184876
    gb=[a+c+k*x for a,c,x in zip(adc,acc,t)]
    print(name,"bits:",t)
    print("  (a) nominal-BW other (ns):",[round(x) for x in ga])
    print("  (b) calibrated total (ns):",[round(x) for x in gb]," slowest=L%d"%(1+gb.index(max(gb))), " L2/L1=%.2f"%(gb[1]/gb[0]))
# minimal per-vector model, tile level only (not divided by duplication)
def tile_terms(l):
    H,W,C,K,_,Co,mp,s=net[l]; n=niv[l]
    if NM[l]: co=min(Co,64); rin=C*K*K; kap=3; bacc=28; Wob=32*4; Wib=32*9; Wht=9*128
    else:     co=min(Co,128); rin=min(C*K*K,1024); kap=1; bacc=25; Wob=50*1; Wib=32*2; Wht=2*128
    outb=co*bacc; inb=rin*8/kap
    return n*outb/Wob, n*inb/Wib, n*(outb+inb)/Wht
print("L  M0(out buf+Htree-out)  M1(all tile terms)  meas_other  M0 err  M1 err   M1 total  meas total")
M1t=[]
for l in range(8):
    ob,ib,ht=tile_terms(l)
    H,W,C,K,_,Co,mp,s=net[l]
    co=min(Co,64) if NM[l] else min(Co,128); b=28 if NM[l] else 25; Wht=1152 if NM[l] else 256
    m0=(ob+niv[l]*co*b/Wht)*clk; m1=(ob+ib+ht)*clk
    M1t.append(m1+adc[l]+acc[l])
    print("%d %10.0f %18.0f %14.0f %+7.1f%% %+7.1f%% %10.0f %10.0f"%(l+1,m0,m1,oth[l],100*(m0/oth[l]-1),100*(m1/oth[l]-1),M1t[-1],tot[l]))
print("M1 slowest = L%d"%(1+M1t.index(max(M1t))))
